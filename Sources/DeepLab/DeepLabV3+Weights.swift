import Foundation

extension DeepLabV3 {
    /// Keys of the first convolution (whose RGB filters are summed for a 1-channel model).
    var firstConvolutionKey: String { backbone.convUnits[0].conv.weight.name }

    /// Keys of the classifiers' last layers (re-initialised when the class count differs).
    var classifierKeys: Set<String> {
        Set(
            [head.classifier.name, "aux_classifier.4"].flatMap { [$0 + ".weight", $0 + ".bias"] })
    }

    /// Loads a `state_dict` (torchvision's keys, or segmentation-models-pytorch's for DeepLabV3+) into the model.
    ///
    /// Every model key must be present with the model's shape, with three conversions: 3-channel weights of the
    /// first convolution are summed over RGB for a 1-channel model; the classifiers' last layers keep their
    /// fresh initialisation when the file has a different class count; and a file of the other decoder (a
    /// DeepLabV3 `state_dict` for a DeepLabV3+ model, or the reverse) gives its backbone only, under this
    /// model's backbone keys, the head starting fresh (its tensors in the file skipped and reported). Keys the
    /// model does not have are an error (except `aux_classifier.*` when the model has no auxiliary head, which
    /// is skipped and reported).
    ///
    /// - Parameters:
    ///   - tensors: values by `state_dict` key.
    ///   - source: the file they came from, for messages.
    /// - Returns: notes on each conversion made, for the user.
    /// - Throws: `DeepLabError.mismatchedWeights` listing every missing, unexpected and mis-shaped key.
    @discardableResult
    public func load(stateDict tensors: [String: FloatTensor], source: String) throws -> [String] {
        var (tensors, notes, fresh) = (tensors, [String](), Set<String>())
        if let backbone = otherDecodersBackbone(tensors) {
            notes.append(
                "\(source) is a \(backbone.decoder) state_dict: took its \(backbone.tensors.count) backbone tensors "
                    + "under \(configuration.backbonePrefix), skipped its other \(tensors.count - backbone.tensors.count); "
                    + "the head starts fresh")
            tensors = backbone.tensors
            fresh = Set(parameters.map(\.name).filter { !$0.hasPrefix(configuration.backbonePrefix) })
        }
        var missing: [String] = []
        var misshaped: [String] = []
        var assignments: [(Parameter, [Float])] = []
        var reinitialised: [String] = []
        let firstConvolution = firstConvolutionKey
        for p in parameters {
            guard let t = tensors[p.name] else {
                if !fresh.contains(p.name) { missing.append(p.name) }
                continue
            }
            if t.shape == p.shape {
                assignments.append((p, t.values))
            } else if p.name == firstConvolution, p.shape.count == 4, t.shape.count == 4, p.shape[1] == 1,
                t.shape[1] == 3, t.shape[0] == p.shape[0], t.shape[2...] == p.shape[2...]
            {
                let o = t.shape[0]
                let k = t.shape[2] * t.shape[3]
                var summed = [Float](repeating: 0, count: o * k)
                for f in 0..<o {
                    for c in 0..<3 {
                        for i in 0..<k { summed[f * k + i] += t.values[(f * 3 + c) * k + i] }
                    }
                }
                assignments.append((p, summed))
                notes.append("\(p.name): summed the RGB filters of \(t.shape) into one input channel")
            } else if classifierKeys.contains(p.name), t.shape.count == p.shape.count,
                t.shape.dropFirst() == p.shape.dropFirst()
            {
                reinitialised.append(p.name)
            } else {
                misshaped.append("\(p.name) is \(t.shape) in the file, \(p.shape) in the model")
            }
        }
        let known = Set(parameters.map(\.name))
        var unexpected: [String] = []
        var skippedAuxiliary = 0
        for key in tensors.keys.sorted() where !known.contains(key) {
            if auxiliaryLogitsAbsent, key.hasPrefix("aux_classifier.") {
                skippedAuxiliary += 1
            } else {
                unexpected.append(key)
            }
        }
        guard missing.isEmpty, unexpected.isEmpty, misshaped.isEmpty else {
            throw DeepLabError.mismatchedWeights(
                file: source, missing: missing, unexpected: unexpected,
                misshaped: misshaped)
        }
        for (p, values) in assignments {
            p.value = values
            p.markUpdated()
        }
        if !reinitialised.isEmpty {
            notes.append(
                "the file has a different class count: re-initialised \(reinitialised.joined(separator: ", ")) "
                    + "for \(configuration.classCount) classes")
        }
        if skippedAuxiliary > 0 {
            notes.append("skipped \(skippedAuxiliary) aux_classifier tensors (this model has no auxiliary head)")
        }
        return notes
    }

    private var auxiliaryLogitsAbsent: Bool { !configuration.auxiliaryHead }

    /// When `tensors` hold no key under this model's backbone prefix but some under the other decoder's, those
    /// renamed to this model's keys, and the other decoder.
    private func otherDecodersBackbone(_ tensors: [String: FloatTensor])
        -> (decoder: DeepLabConfiguration.Decoder, tensors: [String: FloatTensor])?
    {
        var other = configuration
        other.decoder = configuration.decoder == .v3 ? .v3plus : .v3
        let (own, theirs) = (configuration.backbonePrefix, other.backbonePrefix)
        guard !tensors.keys.contains(where: { $0.hasPrefix(own) }) else { return nil }
        let renamed = tensors.compactMap { key, value in
            key.hasPrefix(theirs) ? (own + key.dropFirst(theirs.count), value) : nil
        }
        return renamed.isEmpty ? nil : (other.decoder, Dictionary(renamed, uniquingKeysWith: { a, _ in a }))
    }

    /// Loads a torchvision `state_dict` saved as safetensors.
    ///
    /// - Returns: notes on conversions made.
    /// - Throws: `DeepLabError.malformedWeights` or `.mismatchedWeights`.
    @discardableResult
    public func loadSafetensors(_ path: String) throws -> [String] {
        try load(stateDict: SafetensorsFile.read(path).tensors, source: path)
    }

    /// Writes the parameters and buffers as a safetensors `state_dict` that torchvision loads.
    public func saveSafetensors(to path: String) throws {
        try SafetensorsFile.write(
            parameters.map { ($0.name, FloatTensor(shape: $0.shape, values: $0.value)) },
            metadata: ["format": "pt"], to: path)
    }
}
