import SliceLab

/// `slicelab train DATASET --arch … --num-classes K --out MODEL.h5` (issue #5).
enum TrainCommand: Command {
    static let spec = CommandSpec(
        name: "train",
        summary: "Train a DeepLabV3 model on a labeled set.",
        positionals: [PositionalSpec("DATASET", help: "A labeled-set folder (images/, labels/, dataset.json).")],
        options: [
            OptionSpec("arch", .choice(["deeplabv3_resnet18", "deeplabv3_resnet34", "deeplabv3_resnet50",
                                        "deeplabv3_resnet101", "deeplabv3_mobilenet_v2"]),
                       help: "Architecture.", required: true),
            OptionSpec("num-classes", .int(2...65535), help: "Classes K.", required: true),
            OptionSpec("in-channels", .choice(["1", "3"]), help: "Input channels.", default: "1"),
            OptionSpec("epochs", .int(1...Int.max), help: "Epochs."),
            OptionSpec("steps", .int(1...Int.max), help: "Steps (instead of epochs)."),
            OptionSpec("batch", .int(1...Int.max), help: "Batch size.", default: "8"),
            OptionSpec("crop", .int(8...Int.max), help: "Random crop size in pixels.", default: "256"),
            OptionSpec("lr", .double(0...Double.greatestFiniteMagnitude), help: "Base learning rate."),
            OptionSpec("optimizer", .choice(["sgd", "adamw"]), help: "Optimizer.", default: "adamw"),
            OptionSpec("loss", .choice(["ce", "dice", "dicece"]), help: "Loss.", default: "dicece"),
            OptionSpec("class-weights", .doubles, help: "Cross-entropy class weights."),
            OptionSpec("init", valueName: "WEIGHTS", help: "Start from a torchvision safetensors or checkpoint."),
            OptionSpec("resume", valueName: "CKPT", help: "Resume an interrupted run exactly."),
            OptionSpec("val-every", .int(1...Int.max), help: "Validate every N steps."),
            OptionSpec("seed", .int(), help: "Random seed.", default: "0"),
            OptionSpec("threads", .int(1...1024), help: "Compute threads.", default: "the machine's cores"),
            OptionSpec("out", valueName: "MODEL.h5", help: "Checkpoint to write.", required: true),
        ])

    static func run(_ arguments: ParsedArguments) throws {
        throw notYetAvailable("train", "training, issue #5")
    }
}
