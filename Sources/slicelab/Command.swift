import SliceLab

/// A `slicelab` subcommand: its declaration and the call into the `SliceLab` library that does the work.
protocol Command {
    static var spec: CommandSpec { get }
    /// Runs the command. Throws `UsageError` for bad usage (exit 2) and any other error for failures (exit 1).
    static func run(_ arguments: ParsedArguments) throws
}

/// Every subcommand, in the order `slicelab --help` lists them.
let commands: [Command.Type] = [
    InfoCommand.self, ConvertCommand.self, SegmentCommand.self, ClusterCommand.self,
    EvaluateCommand.self, CompareCommand.self, TrainCommand.self, DemoCommand.self,
]

