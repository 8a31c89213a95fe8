// swift-tools-version:6.0
import PackageDescription

// DCMTK's pkg-config file on Debian 12 requires `sndfile` and is unusable: link its libraries by name.
let dcmtkLibraries = [
    "dcmnet", "dcmtls", "dcmrt", "dcmseg", "dcmfg", "dcmiod", "dcmimage", "dcmimgle", "dcmjpeg", "ijg8", "ijg12",
    "ijg16",
    "dcmjpls", "dcmtkcharls", "dcmdata", "oflog", "ofstd", "z"
]

let package = Package(
    name: "SliceLab",
    products: [
        .executable(name: "slicelab", targets: ["slicelab"]),
        // The workflows and the services under them, for drivers such as the fuzz targets.
        .library(
            name: "SliceLabKit",
            targets: [
                "SliceLabKit", "SliceLabIO", "SliceLabDatasets", "SliceLabInference", "SliceLabResults",
                "SliceLabNetwork"
            ]),
        // Training (optimizers, losses, augmentation, batches, schedules, checkpoints; the trainer and the plan) for
        // drivers that link it alone, such as Benchmarks/training_driver.
        .library(name: "DeepLabTraining", targets: ["DeepLabTraining"])
    ],
    targets: [
        // MARK: - C interop (each the only place its C library is named)
        .target(
            name: "CDCMTK",
            cxxSettings: [.unsafeFlags(["-std=c++17"])],
            linkerSettings: dcmtkLibraries.map { .linkedLibrary($0) }
        ),
        // The serial HDF5, pinned: installing Debian's parallel HDF5 repoints the generic `hdf5` name to the MPI build.
        .systemLibrary(name: "CHDF5", pkgConfig: "hdf5-serial", providers: [.apt(["libhdf5-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "COneDNN", providers: [.apt(["libdnnl-dev"])]),
        // nifti_clib: Debian's libnifti2-dev ships no pkg-config file, and its headers sit in /usr/include/nifti and
        // include each other by bare name: the shim compiles with that folder on its path and links libnifti2
        // (not also libniftiio). Swift sees only the shim's own header.
        .target(
            name: "CNIfTI", cSettings: [.unsafeFlags(["-I/usr/include/nifti", "-O2"])],
            linkerSettings: [.linkedLibrary("nifti2"), .linkedLibrary("z")]),
        // libdeflate: whole-buffer gzip inflation for .nii.gz.
        .systemLibrary(name: "CDeflate", pkgConfig: "libdeflate", providers: [.apt(["libdeflate-dev"])]),
        // ONNX's own library (Debian's libonnx-dev 1.12, built with ONNX_ML), behind a flat extern "C" shim.
        .target(
            name: "CONNX",
            cxxSettings: [
                .define("ONNX_NAMESPACE", to: "onnx"), .define("ONNX_ML", to: "1"),
                .unsafeFlags(["-std=c++17"])
            ],
            linkerSettings: [.linkedLibrary("onnx"), .linkedLibrary("onnx_proto"), .linkedLibrary("protobuf")]
        ),
        // Open MPI 4.1 (Debian's libopenmpi-dev): its handles are macros, wrapped as static inline functions.
        .systemLibrary(name: "CMPI", pkgConfig: "ompi-c", providers: [.apt(["libopenmpi-dev"])]),
        .systemLibrary(name: "COpenJPEG", pkgConfig: "libopenjp2", providers: [.apt(["libopenjp2-7-dev"])]),
        // The dense CRF's inner loops, ours (no outside library): baseline x86-64 and AVX2 + FMA builds, chosen at run
        // time from what the CPU reports; -O2 in debug builds too, so the debug tests run the code the release runs.
        .target(name: "CDenseCRFKernels", cSettings: [.unsafeFlags(["-O2"])]),
        // Exact int8 Winograd F(2×2, 3×3), ours: AVX2 functions (`target("avx2")`) called only where oneDNN's
        // effective ISA is AVX2; -O2 in debug builds too.
        .target(name: "CInt8Winograd", cSettings: [.unsafeFlags(["-O2"])]),
        // MobileNetV2's inverted-residual block in one pass (float32; int8 on AVX-512 VNNI), ours: AVX-512 and AVX2
        // functions (`target(...)`), the set chosen from oneDNN's effective ISA; -O3 in debug builds too (AVX2: 86 %
        // of the FMA peak against 79 %).
        .target(
            name: "CFusedBlocks", exclude: ["block_kernels.inc", "int8_kernels.inc"],
            cSettings: [.unsafeFlags(["-O3"])]),
        // Winograd's float32 input and output transforms, ours: baseline, AVX2 and AVX-512 functions (`target(...)`),
        // the set chosen from oneDNN's effective ISA; -O3 in debug builds too.
        .target(name: "CFloatWinograd", exclude: ["transforms.inc"], cSettings: [.unsafeFlags(["-O3"])]),
        // The core clock while busy (a chain of dependent multiplications in assembly), ours, for `--timings`' peak.
        .target(name: "CCPUClock"),

        // MARK: - Swift libraries (data flows downwards only)
        // Read limits, atomic writes, the seeded generator, parallel-for and grid shapes; no C library.
        .target(name: "SliceLabSupport"),
        .target(name: "ImageFiles", dependencies: ["CPNG", "CHDF5", "CNIfTI", "CDeflate", "SliceLabSupport"]),
        // Pixel loops run optimised even in debug builds, so the corpus conformance tests stay within minutes.
        .target(
            name: "DICOM", dependencies: ["CDCMTK", "COpenJPEG", "SliceLabSupport"],
            swiftSettings: [.unsafeFlags(["-O"])]),
        // The engine's and training's per-element loops (gradients, optimizers, clipping, augmentation) likewise,
        // so the engine's training tests fit the debug `make test`.
        .target(
            name: "DeepLab",
            dependencies: [
                "COneDNN", "CInt8Winograd", "CFusedBlocks", "CFloatWinograd", "CCPUClock", "ImageFiles",
                "SliceLabSupport"
            ],
            swiftSettings: [.unsafeFlags(["-O"])]),
        // Optimizers, losses, augmentation, batches and checkpoints; the trainer, its events and validation; the
        // dataset fingerprint and the plan derived from it.
        .target(
            name: "DeepLabTraining",
            dependencies: ["DeepLab", "Classical", "Metrics", "Distributed", "ImageFiles", "SliceLabSupport"],
            swiftSettings: [.unsafeFlags(["-O"])]),
        // Exports checkpoints to ONNX (through CONNX), torchvision's safetensors and Core ML.
        .target(
            name: "ModelExport", dependencies: ["CONNX", "DeepLab", "SliceLabSupport"],
            resources: [.copy("coreml_converter.py")]),
        // Ranks of an MPI job (launcher detection, collectives with a timeout); the only importer of CMPI.
        .target(name: "Distributed", dependencies: ["CMPI", "SliceLabSupport"]),
        .target(name: "Classical", dependencies: ["CDenseCRFKernels", "SliceLabSupport"]),
        .target(name: "Metrics", dependencies: ["Classical", "SliceLabSupport"]),

        // MARK: - Services (each imports only the rooms below it; workflows call them, never each other)
        // The format registry (reading and writing images and label maps), scan images, frame readers, overlays,
        // SEG export.
        .target(name: "SliceLabIO", dependencies: ["ImageFiles", "DICOM", "SliceLabSupport"]),
        // Labeled sets, nnU-Net and MSD layouts, splits, shards, evaluation inputs.
        .target(
            name: "SliceLabDatasets",
            dependencies: ["SliceLabIO", "DICOM", "DeepLab", "DeepLabTraining", "ImageFiles", "SliceLabSupport"]),
        // A model loaded once with its precision; volumes and windows; classical methods; post-processing steps.
        .target(
            name: "SliceLabInference",
            dependencies: [
                "SliceLabIO", "DeepLab", "Classical", "Metrics", "ImageFiles", "DICOM", "SliceLabSupport"
            ]),
        // The DICOM node: remotes, query, pull and push (DIMSE through DICOM's dcmnet association).
        .target(name: "SliceLabNetwork", dependencies: ["CCurl", "DICOM", "SliceLabSupport"]),
        // Results files, merging, comparisons, tables, the HTML report, sharded jobs.
        .target(
            name: "SliceLabResults",
            dependencies: ["SliceLabDatasets", "SliceLabIO", "Metrics", "Distributed", "ImageFiles", "SliceLabSupport"]),

        // MARK: - Workflows: one per command
        .target(
            name: "SliceLabKit",
            dependencies: [
                "SliceLabIO", "SliceLabDatasets", "SliceLabInference", "SliceLabResults",
                "SliceLabSupport", "ImageFiles", "DICOM", "DeepLab", "DeepLabTraining", "Classical",
                "Metrics", "ModelExport", "Distributed", "SliceLabNetwork"
            ],
            resources: [.copy("Resources/Demo")]),

        // MARK: - The executable
        .executableTarget(
            name: "slicelab",
            dependencies: [
                "SliceLabKit", "SliceLabIO", "SliceLabDatasets", "SliceLabInference", "SliceLabResults",
                "SliceLabSupport", "Metrics", "Distributed"
            ]),

        // MARK: - Tests
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        // Hand-written DICOM files, and torchvision's deterministic weights (optimised: they fill whole ResNets), for
        // the engine tests and the command-line tests alike.
        .target(name: "DICOMTestSupport", dependencies: ["DICOM"], path: "Tests/DICOMTestSupport"),
        .target(
            name: "DeepLabTestSupport", dependencies: ["DeepLab", "ImageFiles", "TestSupport"],
            path: "Tests/DeepLabTestSupport", swiftSettings: [.unsafeFlags(["-O"])]),
        .testTarget(name: "SliceLabSupportTests", dependencies: ["SliceLabSupport", "TestSupport"]),
        .testTarget(
            name: "ImageFilesTests", dependencies: ["ImageFiles", "SliceLabSupport", "TestSupport"],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "DICOMTests",
            dependencies: ["DICOM", "DICOMTestSupport", "ImageFiles", "SliceLabSupport", "TestSupport"],
            exclude: ["Fixtures"],
            swiftSettings: [.unsafeFlags(["-O"])]),
        // Optimised, as its target is: the float64 int8 emulation runs whole models.
        .testTarget(
            name: "DeepLabTests",
            dependencies: [
                "DeepLab", "DeepLabTestSupport", "DeepLabTraining", "SliceLabSupport", "TestSupport"
            ],
            exclude: ["Fixtures"],
            swiftSettings: [.unsafeFlags(["-O"])]),
        .testTarget(
            name: "ClassicalTests", dependencies: ["Classical", "SliceLabSupport", "TestSupport"],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "MetricsTests", dependencies: ["Metrics", "SliceLabSupport", "TestSupport"],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "DeepLabTrainingTests",
            dependencies: ["DeepLabTraining", "DeepLab", "ImageFiles", "SliceLabSupport", "TestSupport"]),
        .testTarget(name: "SliceLabNetworkTests", dependencies: ["SliceLabNetwork"]),
        .testTarget(
            name: "SliceLabIOTests",
            dependencies: ["SliceLabIO", "DICOM", "ImageFiles", "SliceLabSupport", "TestSupport"],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "SliceLabDatasetsTests",
            dependencies: [
                "SliceLabDatasets", "SliceLabIO", "DeepLab", "DeepLabTraining", "ImageFiles", "SliceLabSupport",
                "TestSupport"
            ]),
        .testTarget(
            name: "SliceLabInferenceTests",
            dependencies: ["SliceLabInference", "SliceLabIO", "Classical", "DICOM", "SliceLabSupport", "TestSupport"]),
        .testTarget(
            name: "SliceLabResultsTests",
            dependencies: ["SliceLabResults", "SliceLabIO", "Metrics", "ImageFiles", "SliceLabSupport", "TestSupport"],
            exclude: ["Fixtures"]),
        // The workflows, and the command line end to end (each test runs the built `slicelab`).
        .testTarget(
            name: "SliceLabTests",
            dependencies: [
                "SliceLabKit", "SliceLabIO", "SliceLabDatasets", "SliceLabInference", "SliceLabResults",
                "SliceLabSupport", "DICOM", "DeepLab", "DeepLabTraining", "Classical",
                "ImageFiles", "TestSupport", "DICOMTestSupport", "DeepLabTestSupport", "slicelab"
            ],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "ModelExportTests",
            dependencies: [
                "ModelExport", "DeepLab", "ImageFiles", "SliceLabSupport",
                "TestSupport"
            ],
            exclude: ["Fixtures"]),
        .testTarget(name: "DistributedTests", dependencies: ["Distributed", "TestSupport"]),
        // Fault injection (SIGKILL, full and read-only disks), corrupt batches and read bounds, end to end.
        .testTarget(
            name: "RobustnessTests",
            dependencies: [
                "SliceLabKit", "SliceLabIO", "SliceLabDatasets", "SliceLabInference", "SliceLabResults", "DICOM",
                "DeepLab", "DeepLabTraining",
                "ImageFiles", "Metrics", "SliceLabSupport", "TestSupport"
            ],
            exclude: ["Regressions"])
    ]
)
