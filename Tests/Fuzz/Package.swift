// swift-tools-version:5.9
import PackageDescription

// libFuzzer targets for every reader of outside files (issue #10). Built only by `make fuzz`, with
// `swift build -c release --sanitize=fuzzer --sanitize=address` (libFuzzer from the Swift toolchain's clang
// runtime), never by the main package's `swift build`. Each target defines LLVMFuzzerTestOneInput; libFuzzer
// supplies `main`.
let sliceLab = Target.Dependency.product(name: "SliceLabKit", package: "SliceLab")

func fuzzTarget(_ name: String) -> Target {
    .executableTarget(name: name, dependencies: [sliceLab, "FuzzSupport"])
}

let package = Package(
    name: "SliceLabFuzz",
    dependencies: [.package(name: "SliceLab", path: "../..")],
    targets: [
        .target(name: "FuzzSupport", dependencies: [sliceLab]),
        fuzzTarget("fuzz-dicom"),
        fuzzTarget("fuzz-dicom-seg"),
        fuzzTarget("fuzz-rtstruct"),
        fuzzTarget("fuzz-nrrd"),
        fuzzTarget("fuzz-multipart"),
        fuzzTarget("fuzz-png"),
        fuzzTarget("fuzz-hdf5"),
        fuzzTarget("fuzz-nifti"),
        fuzzTarget("fuzz-checkpoint"),
        fuzzTarget("fuzz-safetensors"),
        fuzzTarget("fuzz-dataset-json"),
        // The parser with the executable's real command declarations (symlinked from Sources/slicelab).
        fuzzTarget("fuzz-cli")
    ]
)
