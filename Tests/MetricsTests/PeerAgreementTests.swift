import Metrics
import Testing

/// Agreement with MONAI 1.6.1 and medpy 0.5.2 on the committed goldens (see `Datasets/goldens/metrics_goldens.py`).
@Suite struct PeerAgreementTests {
    static let goldens = Result { try Goldens.load() }

    static func evaluate(_ golden: Goldens.Case, _ hd95: HD95Definition) throws -> CaseMetrics {
        try CaseMetrics(
            reference: golden.grid(golden.reference), prediction: golden.grid(golden.prediction),
            settings: EvaluationSettings(
                classCount: golden.class_count, toleranceMM: golden.tolerance_mm,
                hd95: hd95, empty: .nan))
    }

    /// Dice and IoU equal MONAI (`ignore_empty=True`, float64 inputs) to 1e-12, NaN for an empty reference;
    /// precision and recall equal MONAI's confusion-matrix ratios to 1e-12 where the reference is not empty.
    @Test func overlapMetricsMatchMONAIToOneInATrillion() throws {
        for golden in try Self.goldens.get().cases {
            let metrics = try Self.evaluate(golden, .max)
            for c in 0..<golden.class_count {
                let referenceEmpty = metrics.confusion.truePositives(c) + metrics.confusion.falseNegatives(c) == 0
                for (name, metric) in [
                    ("dice", MetricName.dice), ("iou", .iou), ("precision", .precision),
                    ("recall", .recall)
                ] {
                    let ours = metrics.values[metric]![c]
                    let theirs = value(golden.monai[name]![c])
                    if referenceEmpty {
                        #expect(ours.isNaN, "\(golden.name) class \(c) \(name): empty reference must be NaN")
                    } else {
                        #expect(
                            agree(ours, theirs, 1e-12), "\(golden.name) class \(c) \(name): \(ours) vs MONAI \(theirs)")
                    }
                }
            }
        }
    }

    /// HD, ASSD and NSD agree with MONAI within 1e-6 mm (MONAI rounds distances to float32). HD95 agrees within
    /// 1e-6 mm plus the shift torch.quantile makes by rounding q = 0.95 to float32 (|Δq|·(n−1)·HD, n the
    /// directed distance count). Where one mask is empty MONAI's HD95 is NaN (torch.quantile of +∞) and ours
    /// is +∞ by the pinned rule.
    @Test func surfaceMetricsMatchMONAIWithinAMicrometre() throws {
        let quantileShift = abs(Double(Float(0.95)) - 0.95)
        for golden in try Self.goldens.get().cases {
            let metrics = try Self.evaluate(golden, .max)
            let reference = try golden.grid(golden.reference)
            let prediction = try golden.grid(golden.prediction)
            for c in 0..<golden.class_count {
                let distances = try SurfaceDistances(
                    prediction: prediction.mask(of: c), reference: reference.mask(of: c),
                    shape: golden.shape, spacing: golden.spacing)
                let n = max(distances.predictionToReference.count, distances.referenceToPrediction.count)
                for (name, metric) in [("hd", MetricName.hd), ("hd95", .hd95), ("assd", .assd), ("nsd", .nsd)] {
                    let ours = metrics.values[metric]![c]
                    let theirs = value(golden.monai[name]![c])
                    var tolerance = 1e-6
                    if name == "hd95" {
                        if ours.isInfinite {
                            #expect(
                                theirs.isNaN && value(golden.monai["hd"]![c]).isInfinite,
                                "\(golden.name) class \(c): one-sided empty HD95")
                            continue
                        }
                        tolerance += quantileShift * Double(max(n - 1, 0)) * metrics.values[.hd]![c]
                    }
                    #expect(
                        agree(ours, theirs, tolerance), "\(golden.name) class \(c) \(name): \(ours) vs MONAI \(theirs)")
                }
            }
        }
    }

    /// With `--hd95 pooled`, HD95 equals medpy's `hd95`; HD, ASSD (medpy 0.5 pools both directions as MONAI)
    /// and the default HD95 computed in float64 by numpy agree within 1e-9 mm; Dice, IoU, precision and
    /// recall equal medpy's `dc`, `jc`, `precision`, `recall` to 1e-12 — on every class medpy accepts (both
    /// masks non-empty).
    @Test func distancesMatchMedpyInDoublePrecision() throws {
        for golden in try Self.goldens.get().cases {
            let pooled = try Self.evaluate(golden, .pooled)
            let maximum = try Self.evaluate(golden, .max)
            for c in 0..<golden.class_count {
                guard let hd = golden.medpy["hd"]![c] else { continue }
                let medpy = { (name: String) in value(golden.medpy[name]![c]!) }
                #expect(agree(pooled.values[.hd]![c], value(hd), 1e-9), "\(golden.name) class \(c) hd")
                #expect(
                    agree(pooled.values[.hd95]![c], medpy("hd95"), 1e-9),
                    "\(golden.name) class \(c) pooled hd95 \(pooled.values[.hd95]![c]) vs medpy \(medpy("hd95"))")
                #expect(
                    agree(maximum.values[.hd95]![c], medpy("hd95_max_float64"), 1e-9),
                    "\(golden.name) class \(c) max hd95")
                #expect(agree(pooled.values[.assd]![c], medpy("assd"), 1e-9), "\(golden.name) class \(c) assd")
                for (name, metric) in [
                    ("dice", MetricName.dice), ("iou", .iou), ("precision", .precision),
                    ("recall", .recall)
                ] {
                    #expect(agree(pooled.values[metric]![c], medpy(name), 1e-12), "\(golden.name) class \(c) \(name)")
                }
            }
        }
    }

    @Test func goldensRecordThePeerVersions() throws {
        let versions = try Self.goldens.get().versions
        #expect(versions["monai"] != nil && versions["medpy"] != nil && versions["scipy"] != nil)
    }
}
