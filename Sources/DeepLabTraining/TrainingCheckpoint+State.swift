import DeepLab
import Foundation
import ImageFiles
import SliceLabSupport

/// The training state of a checkpoint: configuration, step, sampler, best score, random state, optimizer and
/// history (the layout is on `TrainingCheckpoint`).
extension TrainingCheckpoint {
    /// Writes the configuration, state and history into an open file.
    public static func writeTraining(
        _ configuration: TrainingConfiguration, _ state: TrainingState,
        to file: HDF5File
    ) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(configuration), as: UTF8.self)
        try file.createGroup("/training")
        try file.setAttribute("configuration", .string(json), at: "/training")
        try file.setAttribute("step", .int(Int64(state.step)), at: "/training")
        try file.setAttribute("epoch", .int(Int64(state.sampler.epoch)), at: "/training")
        try file.setAttribute("position", .int(Int64(state.sampler.position)), at: "/training")
        try file.setAttribute("sampling_scheme", .int(Int64(SamplerState.scheme)), at: "/training")
        try file.setAttribute("samples_drawn", .int(Int64(state.sampler.drawn)), at: "/training")
        try file.setAttribute("best_score", .double(state.bestScore ?? .nan), at: "/training")
        try file.setAttribute("best_step", .int(Int64(state.bestStep ?? -1)), at: "/training")
        try file.setAttribute(
            "validations_without_improvement", .int(Int64(state.validationsWithoutImprovement)),
            at: "/training")
        try file.write(
            state.sampler.random.state.map { Int64(bitPattern: $0) }, shape: [4],
            to: "/training/random_state")
        try file.write(state.sampler.order.map(Int64.init), shape: [state.sampler.order.count], to: "/training/order")

        if file.exists("/optimizer") { try file.remove("/optimizer") }
        try file.createGroup("/optimizer")
        try file.setAttribute("kind", .string(state.optimizer.kind), at: "/optimizer")
        try file.setAttribute("step_count", .int(Int64(state.optimizer.stepCount)), at: "/optimizer")
        for (parameter, buffers) in state.optimizer.buffers {
            for (name, values) in buffers {
                try file.write(values, shape: [values.count], to: "/optimizer/\(parameter)/\(name)")
            }
        }

        let history = state.history
        let classes = configuration.classCount
        try file.write(history.trainLoss, shape: [history.trainLoss.count], to: "/history/train_loss")
        try file.write(history.learningRate, shape: [history.learningRate.count], to: "/history/learning_rate")
        try file.write(history.gradientNorm, shape: [history.gradientNorm.count], to: "/history/gradient_norm")
        try file.write(
            history.validationStep.map(Int64.init), shape: [history.validationStep.count],
            to: "/history/val_step")
        try file.write(history.validationLoss, shape: [history.validationLoss.count], to: "/history/val_loss")
        try file.write(
            history.validationMeanDice, shape: [history.validationMeanDice.count],
            to: "/history/val_mean_dice")
        try file.write(
            Array(history.validationDice.joined()), shape: [history.validationDice.count, classes],
            to: "/history/val_dice")
        try file.write(
            Array(history.validationIoU.joined()), shape: [history.validationIoU.count, classes],
            to: "/history/val_iou")
    }

    /// Reads the configuration and state written by `writeTraining`.
    ///
    /// - Throws: `TrainingError.invalidState` naming the file and what is missing or inconsistent.
    public static func readTraining(from file: HDF5File) throws -> (TrainingConfiguration, TrainingState) {
        func fail(_ reason: String) -> TrainingError { .invalidState(file: file.path, reason: reason) }
        guard file.exists("/training"), file.hasAttribute("configuration", at: "/training") else {
            throw fail("no /training group: not a SliceLab training checkpoint")
        }
        guard let json = try file.attribute("configuration", at: "/training").stringValue else {
            throw fail("/training@configuration is not a string")
        }
        let configuration: TrainingConfiguration
        do { configuration = try JSONDecoder().decode(TrainingConfiguration.self, from: Data(json.utf8)) } catch {
            throw fail("/training@configuration: \(error)")
        }
        func integer(_ name: String, at path: String = "/training") throws -> Int {
            guard let value = try file.attribute(name, at: path).doubleValues?.first, value.isFinite else {
                throw fail("\(path)@\(name) is not a number")
            }
            return Int(value)
        }
        // Scheme 1 drew augmentation in sequence from the sampler's generator: its runs cannot be continued exactly.
        let scheme = file.hasAttribute("sampling_scheme", at: "/training") ? try integer("sampling_scheme") : 1
        guard scheme == SamplerState.scheme else {
            throw fail(
                "it was written with sampling scheme \(scheme) (augmentation drawn in sequence from one "
                    + "stream), and this SliceLab keys every random draw by the sample's global index (scheme "
                    + "\(SamplerState.scheme)), so it cannot resume it exactly; start a new run, with --init "
                    + "\(file.path) to keep its weights")
        }
        let words = try file.read("/training/random_state", as: Int64.self).values.map { UInt64(bitPattern: $0) }
        let random: SeededGenerator
        guard let state = SeededGenerator(state: words) else {
            throw fail("/training/random_state: a random-generator state needs four words, not all zero")
        }
        random = state
        let order = try file.read("/training/order", as: Int64.self).values.map { Int($0) }
        let sampler = SamplerState(
            random: random, order: order, position: try integer("position"),
            epoch: try integer("epoch"), drawn: try integer("samples_drawn"),
            seed: configuration.seed)
        guard sampler.position <= order.count else { throw fail("sampler position beyond its order") }

        guard let kind = try file.attribute("kind", at: "/optimizer").stringValue else {
            throw fail("/optimizer@kind is not a string")
        }
        var buffers: [String: [String: [Float]]] = [:]
        for parameter in try file.children(of: "/optimizer") {
            for name in try file.children(of: "/optimizer/\(parameter)") {
                buffers[parameter, default: [:]][name] = try file.read(
                    "/optimizer/\(parameter)/\(name)",
                    as: Float.self
                ).values
            }
        }
        let optimizer = OptimizerState(
            kind: kind, stepCount: try integer("step_count", at: "/optimizer"),
            buffers: buffers)

        var history = TrainingHistory()
        func doubles(_ name: String) throws -> [Double] { try file.read("/history/\(name)", as: Double.self).values }
        func rows(_ name: String) throws -> [[Double]] {
            let array = try file.read("/history/\(name)", as: Double.self)
            guard array.shape.count == 2, array.shape[1] == configuration.classCount || array.shape[0] == 0 else {
                throw fail("/history/\(name) has shape \(array.shape)")
            }
            return (0..<array.shape[0]).map { Array(array.values[($0 * array.shape[1])..<(($0 + 1) * array.shape[1])]) }
        }
        history.trainLoss = try doubles("train_loss")
        history.learningRate = try doubles("learning_rate")
        history.gradientNorm = try doubles("gradient_norm")
        history.validationStep = try file.read("/history/val_step", as: Int64.self).values.map { Int($0) }
        history.validationLoss = try doubles("val_loss")
        history.validationMeanDice = try doubles("val_mean_dice")
        history.validationDice = try rows("val_dice")
        history.validationIoU = try rows("val_iou")

        let step = try integer("step")
        guard history.trainLoss.count == step else {
            throw fail("the history holds \(history.trainLoss.count) steps but the checkpoint is at step \(step)")
        }
        let bestScore = try file.attribute("best_score", at: "/training").doubleValues?.first
        let bestStep = try integer("best_step")
        return (
            configuration,
            TrainingState(
                step: step, sampler: sampler, optimizer: optimizer, history: history,
                bestScore: bestScore.flatMap { $0.isNaN ? nil : $0 }, bestStep: bestStep < 0 ? nil : bestStep,
                validationsWithoutImprovement: try integer("validations_without_improvement"))
        )
    }
}
