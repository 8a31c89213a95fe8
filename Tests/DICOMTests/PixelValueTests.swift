import DICOM
import DICOMTestSupport
import Foundation
import TestSupport
import Testing

/// Modality values, bit handling and the VOI display pipeline on files made by the test.
struct PixelValueTests {
    let folder: URL

    init() throws { folder = try TestSupport.temporaryFolder("dicom-pixels") }

    @Test func fractionalRescaleIsAppliedInDouble() throws {
        let path = try TestDICOMWriter.ctSlice(
            stored: (0..<20).map { Int16($0 - 10) }, position: [0, 0, 0],
            slope: 0.3333, intercept: -1024.25
        )
        .write(to: folder.appendingPathComponent("rescale.dcm"))
        let values = try DICOMFile(path: path).modalityFrame(0)
        let expected: [Float] = (0..<20).map { (index: Int) -> Float in
            let stored = Double(index - 10)
            return Float(stored * 0.3333 - 1024.25)
        }
        #expect(values == expected)
    }

    @Test func unusedHighBitsAreMaskedAndSignExtendedFromBitsStored() throws {
        var writer = TestDICOMWriter.ctSlice(stored: [], position: [0, 0, 0], slope: 1, intercept: 0)
        writer.set(.bitsStored, us: 12)
        writer.set(.highBit, us: 11)
        // 0xF800 has garbage above bit 11; 0x0800 is −2048 in 12-bit two's complement; 0x07FF is 2047.
        let words: [UInt16] = [0xF800, 0x0800, 0x07FF, 0x1001] + Array(repeating: 0, count: 16)
        writer.set(.pixelData, "OW", TestDICOMWriter.uint16(words))
        let path = try writer.write(to: folder.appendingPathComponent("bits.dcm"))
        let values = try DICOMFile(path: path).storedFrame(0)
        #expect(Array(values.prefix(4)) == [-2048, -2048, 2047, 1])
    }

    @Test func enhancedPerFrameRescaleOverridesTheSharedOne() throws {
        var writer = TestDICOMWriter.ctSlice(stored: Array(repeating: 10, count: 40), position: [0, 0, 0])
        writer.remove(.rescaleSlope)
        writer.remove(.rescaleIntercept)
        writer.set(.numberOfFrames, "IS", "2")
        func transformation(_ slope: String, _ intercept: String) -> TestDICOMWriter.Element {
            var item = TestDICOMWriter()
            item.setSequence(
                .pixelValueTransformationSequence,
                items: [
                    [
                        TestDICOMWriter.element(.rescaleSlope, "DS", slope),
                        TestDICOMWriter.element(.rescaleIntercept, "DS", intercept)
                    ]
                ])
            return item.elements[0]
        }
        writer.setSequence(.sharedFunctionalGroupsSequence, items: [[transformation("2", "0")]])
        writer.setSequence(.perFrameFunctionalGroupsSequence, items: [[], [transformation("0.25", "-5")]])
        let path = try writer.write(to: folder.appendingPathComponent("enhanced.dcm"))
        let file = try DICOMFile(path: path)
        #expect(try file.modalityFrame(0).allSatisfy { $0 == 20 })
        #expect(try file.modalityFrame(1).allSatisfy { $0 == -2.5 })
    }

    @Test func linearWindowFollowsPS3_3C11_2_1_2() {
        let window = VOIWindow(center: 40, width: 400)
        // Below c − 0.5 − (w − 1)/2 = −160 → 0; above c − 0.5 + (w − 1)/2 = 239 → 255.
        #expect(window.apply(-160, outputMinimum: 0, outputMaximum: 255) == 0)
        #expect(window.apply(240, outputMinimum: 0, outputMaximum: 255) == 255)
        let middle = window.apply(39.5, outputMinimum: 0, outputMaximum: 255)
        #expect(abs(middle - 127.5) < 1e-9)
        let exact = VOIWindow(center: 0, width: 100, function: .linearExact)
        #expect(abs(exact.apply(25, outputMinimum: 0, outputMaximum: 100) - 75) < 1e-9)
        let sigmoid = VOIWindow(center: 0, width: 100, function: .sigmoid)
        #expect(abs(sigmoid.apply(0, outputMinimum: 0, outputMaximum: 255) - 127.5) < 1e-9)
        #expect(abs(sigmoid.apply(50, outputMinimum: 0, outputMaximum: 1) - 1 / (1 + exp(-2.0))) < 1e-12)
    }

    @Test func monochromeOneIsInvertedAfterWindowing() throws {
        var writer = TestDICOMWriter.ctSlice(
            stored: (0..<20).map { Int16($0 * 10) }, position: [0, 0, 0],
            slope: 1, intercept: 0)
        writer.set(.windowCenter, "DS", "100")
        writer.set(.windowWidth, "DS", "200")
        let normal = try DICOMFile(path: try writer.write(to: folder.appendingPathComponent("m2.dcm"))).displayFrame(0)
        writer.set(.photometricInterpretation, "CS", "MONOCHROME1")
        let inverted = try DICOMFile(path: try writer.write(to: folder.appendingPathComponent("m1.dcm"))).displayFrame(
            0)
        // Stored 190 → ((190 − 99.5) / 199 + 0.5) × 255 = 243.5 → 243 (round half away from zero on 243.47).
        #expect(normal.first == 0 && normal.last == 243)
        #expect(zip(normal, inverted).allSatisfy { $0 + $1 == 255 })
    }

    @Test func automaticWindowSpansThePercentiles() {
        let values = (0...1000).map { Float($0) }
        let window = VOIWindow.automatic(values)
        #expect(abs(window.center - 500) < 1e-9)
        #expect(abs(window.width - 980) < 1e-9)
    }
}
