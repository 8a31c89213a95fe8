import SliceLabSupport
import Testing

@testable import Classical

@Suite struct RegionTests {
    static var golden: [String: Any] { Goldens.section("components") }

    static func map(_ key: String, shapeKey: String) -> LabelGrid<Int32> {
        let values = Goldens.ints(golden, key).map(Int32.init)
        let dims = Goldens.ints(golden, shapeKey)
        let shape =
            dims.count == 3
            ? GridShape(slices: dims[0], rows: dims[1], columns: dims[2])
            : GridShape(rows: dims.first ?? 0, columns: dims.last ?? 0)
        return LabelGrid<Int32>(shape: shape, labels: values)
    }

    /// skimage.measure.label(map, background=-1, connectivity=c): every pixel labelled, 2-D 4/8-connectivity.
    /// The ids match exactly (both number regions in raster order of their first pixel).
    @Test(arguments: [1, 2])
    func componentsMatchScikitImageIn2D(connectivity: Int) throws {
        let classes = Self.map("map2d", shapeKey: "shape2d")
        let (regions, count) = try ConnectedComponents.label(classes, connectivity: connectivity)
        let expected = Goldens.ints(Self.golden, "label2d_c\(connectivity)").map(Int32.init)
        #expect(samePartition(regions.labels, expected))
        #expect(regions.labels == expected)
        #expect(count == Int(expected.max() ?? 0))
    }

    /// The same on a 3-D volume with 6/18/26-connectivity.
    @Test(arguments: [1, 2, 3])
    func componentsMatchScikitImageIn3D(connectivity: Int) throws {
        let classes = Self.map("map3d", shapeKey: "shape3d")
        let (regions, _) = try ConnectedComponents.label(classes, connectivity: connectivity)
        let expected = Goldens.ints(Self.golden, "label3d_c\(connectivity)")
        #expect(samePartition(regions.labels, expected))
        #expect(regions.labels.map(Int.init) == expected)
    }

    /// The specialised 4-/6-connected path gives the general path's ids (a background value that never occurs
    /// sends the same map through the general path) on seeded random maps of several densities.
    @Test func specialisedFaceConnectedPathMatchesTheGeneralOne() throws {
        var generator = SeededGenerator(seed: 99)
        for (shape, classes) in [
            (GridShape(rows: 61, columns: 47), 2), (GridShape(rows: 40, columns: 40), 4),
            (GridShape(slices: 17, rows: 19, columns: 23), 2),
            (GridShape(slices: 12, rows: 9, columns: 30), 3)
        ] {
            let labels = (0..<shape.count).map { _ in Int32(generator.uniform() * Double(classes)) }
            let map = LabelGrid<Int32>(shape: shape, labels: labels)
            let fast = try ConnectedComponents.label(map, connectivity: 1)
            let general = try ConnectedComponents.label(map, connectivity: 1, background: Int32.min)
            #expect(fast.regions == general.regions && fast.count == general.count, "\(shape)")
        }
    }

    @Test func componentsHonourABackgroundValueAndRefuseABadConnectivity() throws {
        let map = LabelGrid<Int32>(shape: GridShape(rows: 2, columns: 3), labels: [1, 0, 1, 1, 0, 0])
        let (regions, count) = try ConnectedComponents.label(map, connectivity: 1, background: 0)
        #expect(regions.labels == [1, 0, 2, 1, 0, 0] && count == 2)
        #expect(throws: ClassicalError.self) { try ConnectedComponents.label(map, connectivity: 3) }
    }

    @Test func regionStatisticsGiveAreaMeanAndBoundingBox() throws {
        let regions = LabelGrid<Int32>(shape: GridShape(rows: 2, columns: 3), labels: [1, 1, 2, 1, 2, 2])
        let features = FeatureMatrix(count: 6, dimension: 1, values: [1, 2, 10, 3, 20, 30])
        let statistics = try RegionStatistics.measure(regions, features: features)
        #expect(statistics.map(\.area) == [3, 3])
        #expect(statistics[0].meanFeature == [2] && statistics[1].meanFeature == [20])
        #expect(statistics[0].minimum == [0, 0, 0] && statistics[0].maximum == [0, 1, 1])
        #expect(statistics[1].minimum == [0, 0, 1] && statistics[1].maximum == [0, 1, 2])
    }

    @Test func smallRegionsMergeIntoTheirLargestNeighbour() throws {
        // A 1-pixel speck of class 2 between a big class-0 region and a smaller class-1 region.
        let labels: [Int32] = [
            0, 0, 0, 1,
            0, 2, 0, 1,
            0, 0, 1, 1
        ]
        let map = LabelGrid<Int32>(shape: GridShape(rows: 3, columns: 4), labels: labels)
        let (classes, regions) = try RegionMerging.mergeSmallRegions(map, minimumSize: 2, connectivity: 1)
        #expect(classes.labels[5] == 0)
        #expect(regions.labelBound - 1 == 2)
        // Nothing under the minimum size remains.
        let areas = try RegionStatistics.measure(regions).map(\.area)
        #expect(areas.allSatisfy { $0 >= 2 })
        // A map that is one region has nothing to merge into.
        let single = LabelGrid<Int32>(shape: GridShape(rows: 1, columns: 2), labels: [3, 3])
        #expect(try RegionMerging.mergeSmallRegions(single, minimumSize: 10).classes == single)
    }
}

@Suite struct RegularizationTests {
    /// A 5×5 map: class 1 fills the middle 3×3 except a one-pixel hole of class 0 at its centre, and a
    /// one-pixel speck of class 2 in a corner.
    static let noisy = LabelGrid<Int32>(
        shape: GridShape(rows: 5, columns: 5),
        labels: [
            2, 0, 0, 0, 0,
            0, 1, 1, 1, 0,
            0, 1, 0, 1, 0,
            0, 1, 1, 1, 0,
            0, 0, 0, 0, 0
        ])

    @Test func majorityFilterRemovesSpecksAndFillsHoles() throws {
        let smoothed = try Regularization.majority(Self.noisy)
        #expect(smoothed.labels[0] == 0)
        #expect(smoothed.labels[12] == 1)
    }

    /// A 9×9 map: a 5×5 block of class 1 with a one-pixel hole at its centre, in class 0, with a one-pixel
    /// speck of class 2 in the corner.
    static let blocky: LabelGrid<Int32> = {
        var labels = [Int32](repeating: 0, count: 81)
        for row in 2...6 { for column in 2...6 { labels[row * 9 + column] = 1 } }
        labels[4 * 9 + 4] = 0
        labels[0] = 2
        return LabelGrid<Int32>(shape: GridShape(rows: 9, columns: 9), labels: labels)
    }()

    @Test func openingRemovesSpecksAndClosingFillsHoles() throws {
        let opened = try Regularization.opening(Self.blocky, connectivity: 1)
        #expect(opened.labels[0] == 0)
        #expect(opened.labels[4 * 9 + 4] == 1)  // the one-pixel hole is a speck of class 0 too
        #expect(opened.labels.filter { $0 == 1 }.count >= 20)  // the block's body stays
        let closed = try Regularization.closing(Self.blocky, connectivity: 1)
        #expect(closed.labels[4 * 9 + 4] == 1)
        #expect(closed.labels[0] == 2)  // closing does not remove specks
        #expect(closed.labels.filter { $0 == 1 }.count == 25)  // nor eat the block's corners
        let closedBackground = try Regularization.closing(Self.blocky, connectivity: 1, classes: [0])
        #expect(closedBackground.labels[0] == 0)
    }

    @Test func pottsICMSmoothsAsBetaGrowsAndKeepsTheMapAtBetaZero() throws {
        let unchanged = try Regularization.pottsICM(Self.noisy, classCount: 3, beta: 0)
        #expect(unchanged.map == Self.noisy)
        let smoothed = try Regularization.pottsICM(Self.noisy, classCount: 3, beta: 0.6)
        #expect(smoothed.map.labels[0] == 0 && smoothed.map.labels[12] == 1)
        #expect(throws: ClassicalError.self) { try Regularization.pottsICM(Self.noisy, classCount: 2, beta: 1) }
    }

    @Test func regularisersWorkOnVolumes() throws {
        var labels = [Int32](repeating: 0, count: 27)
        labels[13] = 1  // the centre voxel
        let volume = LabelGrid<Int32>(shape: GridShape(slices: 3, rows: 3, columns: 3), labels: labels)
        #expect(try Regularization.majority(volume).labels.allSatisfy { $0 == 0 })
        #expect(try Regularization.pottsICM(volume, classCount: 2, beta: 1, connectivity: 1).map.labels[13] == 0)
    }
}

@Suite struct ClassMappingTests {
    @Test func intensityOrderRanksClustersDarkestFirst() throws {
        let mapping = try ClassMapping.intensityOrder(
            clusters: [0, 0, 1, 2, 2], intensity: [9, 11, 1, 5, 5],
            clusterCount: 4)
        #expect(mapping.classOf == [2, 0, 1, 3])
        #expect(!mapping.isOracle)
    }

    @Test func majorityVoteLearnsOnTrainingAndHungarianIsAnOracle() throws {
        let clusters: [Int32] = [0, 0, 0, 1, 1, 2, 2, 2]
        let truth: [Int32] = [1, 1, 0, 0, 0, 1, 1, 0]
        let vote = try ClassMapping.majorityVote(clusters: clusters, truth: truth, clusterCount: 4, classCount: 2)
        #expect(vote.classOf == [1, 0, 1, 0])
        let oracle = try ClassMapping.hungarianOracle(clusters: clusters, truth: truth, clusterCount: 3, classCount: 3)
        #expect(oracle.isOracle && oracle.method.rawValue == "hungarian-oracle")
        #expect(Set(oracle.classOf).count == 3)
        #expect(oracle.classOf[1] == 0)  // cluster 1 is all class 0
        #expect(try oracle.apply([1, 1]) == [0, 0])
        #expect(throws: ClassicalError.self) { try oracle.apply([5]) }
    }

    @Test func hungarianFindsTheMinimumCostAssignment() throws {
        // Brute force over the 24 permutations of a 4×4 problem.
        let cost: [[Double]] = [[4, 1, 3, 9], [2, 0, 5, 3], [3, 2, 2, 8], [7, 6, 1, 4]]
        let assignment = Hungarian.minimumCostAssignment(cost)
        func total(_ columns: [Int]) -> Double { columns.enumerated().reduce(0) { $0 + cost[$1.offset][$1.element] } }
        func permutations(_ items: [Int]) -> [[Int]] {
            items.count <= 1
                ? [items]
                : items.flatMap { item in
                    permutations(items.filter { $0 != item }).map { [item] + $0 }
                }
        }
        #expect(total(assignment) == permutations([0, 1, 2, 3]).map(total).min())
    }

    /// The Hungarian method finds a least-cost assignment: equal in cost to trying every assignment, on seeded
    /// random square and rectangular matrices.
    @Test func assignmentIsOptimalAgainstExhaustiveSearch() {
        var generator = SeededGenerator(seed: 20_261_206)
        for _ in 0..<300 {
            let rows = Int.random(in: 1...5, using: &generator)
            let columns = Int.random(in: 1...5, using: &generator)
            let cost = (0..<rows).map { _ in
                (0..<columns).map { _ in Double(Int.random(in: 0...20, using: &generator)) / 10 }
            }
            let found = Hungarian.minimumCostPairs(cost)
            #expect(found.count == min(rows, columns))
            #expect(Set(found.map(\.row)).count == found.count && Set(found.map(\.column)).count == found.count)
            let total = found.map { cost[$0.row][$0.column] }.reduce(0, +)
            #expect(abs(total - Self.exhaustiveMinimum(cost)) < 1e-12, "\(cost)")
        }
    }

    static func exhaustiveMinimum(_ cost: [[Double]]) -> Double {
        let (rows, columns) = (cost.count, cost[0].count)
        if rows > columns { return exhaustiveMinimum((0..<columns).map { j in cost.map { $0[j] } }) }
        func search(_ row: Int, _ used: Set<Int>) -> Double {
            guard row < rows else { return 0 }
            return (0..<columns).filter { !used.contains($0) }.map { cost[row][$0] + search(row + 1, used.union([$0])) }
                .min()!
        }
        return search(0, [])
    }
}
