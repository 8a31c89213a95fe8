// swift-tools-version:5.9
import PackageDescription

// The training benchmark's driver (Benchmarks/bench_training.py builds it with `swift build -c release`): it
// links SliceLab's `DeepLabTraining` product, so it times the same code the trainer runs.
let package = Package(
    name: "TrainingDriver",
    dependencies: [.package(name: "SliceLab", path: "../..")],
    targets: [
        .executableTarget(name: "training_driver",
                          dependencies: [.product(name: "DeepLabTraining", package: "SliceLab")],
                          path: ".", sources: ["main.swift"]),
    ]
)
