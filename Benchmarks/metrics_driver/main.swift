// Times SliceLab's Metrics library on raw label files written by bench_metrics.py; compiled by that script
// together with Sources/Metrics (swiftc -O), so it measures the library itself, not file reading.
import Foundation

func readLabels(_ path: String) -> [UInt16] {
    guard let data = FileManager.default.contents(atPath: path) else {
        FileHandle.standardError.write(Data("metrics_driver: cannot read \(path)\n".utf8))
        exit(2)
    }
    return data.map { UInt16($0) }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else { exit(2) }
do {
    switch arguments[1] {
    case "surface":
        // surface REF PRED d0 d1 d2 s0 s1 s2 REPEATS
        let reference = readLabels(arguments[2]).map { $0 == 1 }, prediction = readLabels(arguments[3]).map { $0 == 1 }
        let shape = arguments[4...6].compactMap { Int($0) }, spacing = arguments[7...9].compactMap { Double($0) }
        let repeats = Int(arguments[10]) ?? 1
        var best = Double.infinity, hd95 = 0.0, assd = 0.0
        for _ in 0..<repeats {
            best = min(best, try seconds {
                let distances = try SurfaceDistances(prediction: prediction, reference: reference, shape: shape,
                                                     spacing: spacing)
                hd95 = distances.hausdorff95(.max)
                assd = distances.averageSymmetricSurfaceDistance
            })
        }
        print("{\"seconds\": \(best), \"hd95\": \(hd95), \"assd\": \(assd)}")
    case "overlap":
        // overlap REF PRED slices rows columns classes BATCH REPEATS
        let reference = readLabels(arguments[2]), prediction = readLabels(arguments[3])
        let (slices, rows, columns, classes) = (Int(arguments[4])!, Int(arguments[5])!, Int(arguments[6])!,
                                                Int(arguments[7])!)
        let batch = Int(arguments[8]) ?? slices, repeats = Int(arguments[9]) ?? 1
        let plane = rows * columns
        var best = Double.infinity, diceSum = 0.0
        for _ in 0..<repeats {
            diceSum = 0
            best = min(best, try seconds {
                var start = 0
                while start < slices {
                    let end = min(slices, start + batch)
                    let matrices = try ConfusionMatrix.batch(
                        reference: Array(reference[(start * plane)..<(end * plane)]),
                        prediction: Array(prediction[(start * plane)..<(end * plane)]),
                        itemSize: plane, classCount: classes)
                    for matrix in matrices {
                        for c in 0..<classes {
                            let o = OverlapMetrics(matrix, classIndex: c, voxelVolumeMM3: 1, empty: .nan)
                            if !o.dice.isNaN { diceSum += o.dice + 0 * o.iou }
                        }
                    }
                    start = end
                }
            })
        }
        print("{\"seconds\": \(best), \"dice_sum\": \(diceSum)}")
    default:
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("metrics_driver: \(error)\n".utf8))
    exit(1)
}
