import SliceLabKit

/// `slicelab convert PATH OUT.h5|OUT.png` (issue #3).
enum ConvertCommand: Command {
    static let spec = CommandSpec(
        name: "convert",
        summary: "Convert DICOM to HDF5 (modality values) or PNG (display image), NRRD or DICOM to NIfTI, or label "
            + "maps between DICOM SEG, NIfTI, HDF5 and 3D Slicer's .seg.nrrd.",
        positionals: [
            PositionalSpec("PATH", help: "A DICOM file or a series folder (with --reference: a label file)."),
            PositionalSpec(
                "OUT",
                help: "OUT.h5 for /image in physical units, OUT.png for the display image, OUT.nii.gz, "
                    + "OUT.seg.nrrd for a label map as a 3D Slicer segmentation, OUT.dcm for a DICOM SEG (with "
                    + "--reference).")
        ],
        options: [
            OptionSpec(
                "window", valueName: "C,W|auto", help: "VOI window for PNG: centre,width or 'auto' (percentiles).",
                default: "the file's window, else auto"),
            OptionSpec("frame", .int(0...Int.max), help: "Frame (or slice) to write as PNG.", default: "0"),
            OptionSpec("bits", .choice(["8", "16"]), help: "PNG bit depth.", default: "8"),
            OptionSpec(
                "reference", valueName: "SERIES",
                help: "PATH is a label map (.h5 /labels or .png): write it as a DICOM SEG over this series."),
            dicomOutputOption, roiOption, overlapOption, maxMemoryOption
        ])

    static func run(_ arguments: ParsedArguments) throws {
        let window: ConvertWorkflow.WindowChoice
        do { window = try ConvertWorkflow.WindowChoice(arguments.string("window")) } catch {
            throw UsageError("slicelab convert: \(error)")
        }
        let lines = try ConvertWorkflow.run(
            source: arguments.positional(0) ?? "", output: arguments.positional(1) ?? "", window: window,
            frame: arguments.int("frame") ?? 0, bits: Int(arguments.string("bits") ?? "8") ?? 8,
            reference: arguments.string("reference"),
            labelOptions: try labelReadingOptions(arguments, command: "convert"),
            dicomOutput: arguments.choice("dicom-output") ?? .seg,
            limits: try readLimits(arguments, command: "convert"))
        lines.forEach { print($0) }
    }
}
