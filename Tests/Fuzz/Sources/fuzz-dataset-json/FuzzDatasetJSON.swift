import Foundation
import FuzzSupport
import ImageFiles
import SliceLabDatasets
import SliceLabIO
import SliceLabInference
import SliceLabKit
import SliceLabResults

/// `dataset.json` of a labeled set: the description (JSON decoding, the rules of Datasets/README.md, the
/// preprocessing) and what it makes the reader do with the set's one real case (`case-a`, a 4×4 image and its
/// labels), in both the strict and the `--skip-bad` modes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDatasetJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let description = FuzzInput.write(data, size, name: "set/dataset.json")
    for skipBad in [false, true] {
        do {
            _ = try LabeledSet.open(setFolder, skipBad: skipBad)
        } catch let error as DatasetError {
            // Each error names dataset.json, the case or the split it is about.
            let text = "\(error)"
            guard text.contains(description) || text.hasPrefix("case ") || text.hasPrefix("split ") else {
                FuzzInput.fail("error names neither dataset.json, a case nor a split: \(text)")
            }
        } catch {
            FuzzInput.fail("untyped error \(type(of: error)): \(error)")
        }
    }
    return 0
}

/// The set's folders and its one case, made once per process.
let setFolder: String = {
    let folder = FuzzInput.folder + "/set"
    do {
        for sub in ["images", "labels"] {
            try FileManager.default.createDirectory(atPath: folder + "/" + sub, withIntermediateDirectories: true)
        }
        try PNGImage(rows: 4, columns: 4, channels: 1, samples: (0..<16).map { UInt8($0 * 16) })
            .write(to: folder + "/images/case-a.png")
        try PNGImage(rows: 4, columns: 4, channels: 1, samples: (0..<16).map { UInt8($0 % 2) })
            .write(to: folder + "/labels/case-a.png")
    } catch {
        FuzzInput.fail("cannot make the labeled set \(folder): \(error)")
    }
    return folder
}()
