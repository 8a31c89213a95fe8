import SliceLabIO
import Testing

/// The output format is decided in one place, from the path's ending, for every command.
struct OutputFormatTests {
    @Test func everyOutputEndingNamesItsFormat() {
        let expected: [(String, OutputFormat?)] = [
            ("out/labels.h5", .hdf5), ("LABELS.HDF5", .hdf5), ("case.nii.gz", .nifti), ("case.NII", .nifti),
            ("slice.png", .png), ("SEG.DCM", .dicom), ("labels", nil), ("labels.gz", nil), ("labels.seg.nrrd", .nrrd),
            ("labels.mha", nil),
            ("folder.h5/labels.txt", nil), ("labels.h5.tmp", nil)
        ]
        for (path, format) in expected {
            #expect(OutputFormat(path: path) == format, "\(path)")
        }
        // Every ending a format lists names that format, and no two formats share one.
        for format in OutputFormat.allCases {
            for ending in format.endings {
                #expect(OutputFormat(path: "x" + ending) == format)
                #expect(OutputFormat(path: "X" + ending.uppercased()) == format)
            }
        }
        let endings = OutputFormat.allCases.flatMap(\.endings)
        #expect(Set(endings).count == endings.count)
    }
}
