import Foundation
import ImageFiles

/// The training part of a checkpoint HDF5 file, beside the model's parameters:
///
/// - `/training` attributes: `configuration` (JSON of `TrainingConfiguration`), `step`, `epoch`, `position`,
///   `best_score`, `best_step`, `validations_without_improvement`; datasets `/training/random_state`
///   (int64 [4], the generator's words as bit patterns) and `/training/order` (int64, the epoch's order).
/// - `/optimizer` attributes `kind`, `step_count`; datasets `/optimizer/<parameter key>/<buffer>` (float32).
/// - `/history/train_loss`, `learning_rate`, `gradient_norm` (float64 [steps]); `val_step` (int64 [V]),
///   `val_loss`, `val_mean_dice` (float64 [V]), `val_dice`, `val_iou` (float64 [V, K]).
/// - Parameters, by default, as float32 datasets `/parameters/<state_dict key>` with their PyTorch shapes.
///
/// The parameters are read and written here, beside the model's checkpoint (`DeepLabCheckpoint`); the training
/// state by the extension in `DeepLabTraining` (`TrainingCheckpoint+State.swift`).
public enum TrainingCheckpoint {
    /// Where parameters go when no model writer is given.
    public static let parameterGroup = "/parameters"

    /// Writes the parameters as `/parameters/<key>` datasets.
    public static func writeParameters(_ parameters: [Parameter], to file: HDF5File) throws {
        for parameter in parameters {
            try file.write(parameter.value, shape: parameter.shape, to: "\(parameterGroup)/\(parameter.name)")
        }
    }

    /// Reads every parameter's value from `/parameters/<key>`, checking shapes.
    ///
    /// - Throws: `DeepLabError.invalidCheckpoint` listing missing or mis-shaped keys.
    public static func readParameters(_ parameters: [Parameter], from file: HDF5File) throws {
        var problems: [String] = []
        for parameter in parameters {
            let path = "\(parameterGroup)/\(parameter.name)"
            guard file.exists(path) else {
                problems.append("\(parameter.name) missing")
                continue
            }
            let array = try file.read(path, as: Float.self)
            guard array.shape == parameter.shape else {
                problems.append("\(parameter.name) has shape \(array.shape), expected \(parameter.shape)")
                continue
            }
            parameter.value = array.values
            parameter.markUpdated()
        }
        guard problems.isEmpty else {
            throw DeepLabError.invalidCheckpoint(file: file.path, reason: problems.joined(separator: "; "))
        }
    }
}
