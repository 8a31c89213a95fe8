import Foundation
import ImageFiles
import SliceLabSupport

/// A static, self-contained HTML report of a comparison: the summary table, per-class box plots (inline SVG),
/// and per case the image with the reference and each method's overlay, sorted from worst to best Dice of the
/// first method. It needs no network: images are embedded as base64 PNG.
public struct HTMLReport {
    /// One method's results: `dice[case][class]`, and optional IoU / HD95 for the table.
    public struct Method {
        public let name: String
        public let dice: [[Double]]
        public let iou: [[Double]]
        public let hd95: [[Double]]
        /// Paired Wilcoxon p-value per class against the first method (nil for the first).
        public let pValues: [Double]?

        public init(name: String, dice: [[Double]], iou: [[Double]], hd95: [[Double]], pValues: [Double]?) {
            (self.name, self.dice, self.iou, self.hd95, self.pValues) = (name, dice, iou, hd95, pValues)
        }
    }

    /// One case's pictures: PNG bytes of the image, the reference overlay, and one overlay per method.
    public struct CasePictures {
        public let caseID: String
        public let image: Data
        public let reference: Data
        public let methods: [Data]

        public init(caseID: String, image: Data, reference: Data, methods: [Data]) {
            (self.caseID, self.image, self.reference, self.methods) = (caseID, image, reference, methods)
        }
    }

    public let title: String
    public let classNames: [String]
    public let caseIDs: [String]
    public let methods: [Method]
    public let pictures: [CasePictures]

    public init(title: String, classNames: [String], caseIDs: [String], methods: [Method], pictures: [CasePictures]) {
        (self.title, self.classNames, self.caseIDs, self.methods, self.pictures) = (title, classNames, caseIDs, methods,
                                                                                      pictures)
    }

    /// Writes `index.html` into `folder` (created if needed), atomically.
    public func write(to folder: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw ImageFileError.unwritable(file: folder, reason: "cannot create folder: \(error.localizedDescription)")
        }
        try writeAtomically(Data(html().utf8), to: folder + "/index.html")
    }

    // MARK: - Rendering

    public func html() -> String {
        var body = "<h1>\(escape(title))</h1>\n"
        body += "<p>\(caseIDs.count) cases, \(classNames.count) classes, methods: "
            + methods.map { escape($0.name) }.joined(separator: ", ") + ".</p>\n"
        body += tableHTML()
        body += "<h2>Dice per class</h2>\n<div class=\"plots\">\n"
        for classIndex in foregroundClasses {
            body += boxPlotSVG(classIndex: classIndex)
        }
        body += "</div>\n<h2>Cases, worst to best</h2>\n" + casesHTML()
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
            <style>
            body { font-family: sans-serif; margin: 2em; color: #222; }
            table { border-collapse: collapse; margin: 1em 0; }
            th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
            th:first-child, td:first-child { text-align: left; }
            .plots { display: flex; flex-wrap: wrap; gap: 1em; }
            .case { margin: 1em 0; }
            .case img { width: 200px; image-rendering: pixelated; margin-right: 4px; }
            figure { display: inline-block; margin: 0 4px; text-align: center; font-size: 0.8em; }
            </style></head><body>
            \(body)</body></html>

            """
    }

    private var foregroundClasses: [Int] { classNames.count > 1 ? Array(1..<classNames.count) : [0] }

    private func tableHTML() -> String {
        var html = "<table id=\"summary\"><tr><th>class</th><th>method</th><th>Dice</th><th>IoU</th><th>HD95 (mm)</th>"
            + "<th>p vs \(escape(methods.first?.name ?? ""))</th></tr>\n"
        for classIndex in foregroundClasses {
            for method in methods {
                let p = method.pValues.map { format($0[classIndex], digits: 4) } ?? "—"
                html += "<tr><td>\(escape(classNames[classIndex]))</td><td>\(escape(method.name))</td>"
                    + "<td>\(meanStd(method.dice, classIndex))</td><td>\(meanStd(method.iou, classIndex))</td>"
                    + "<td>\(meanStd(method.hd95, classIndex))</td><td>\(p)</td></tr>\n"
            }
        }
        return html + "</table>\n"
    }

    private func column(_ values: [[Double]], _ classIndex: Int) -> [Double] {
        values.compactMap { classIndex < $0.count ? $0[classIndex] : nil }.filter { $0.isFinite }
    }

    private func meanStd(_ values: [[Double]], _ classIndex: Int) -> String {
        let finite = column(values, classIndex)
        guard !finite.isEmpty else { return "—" }
        let mean = finite.reduce(0, +) / Double(finite.count)
        let variance = finite.count > 1
            ? finite.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(finite.count - 1) : 0
        return "\(format(mean, digits: 3)) ± \(format(variance.squareRoot(), digits: 3))"
    }

    private func format(_ value: Double, digits: Int) -> String {
        value.isNaN ? "NaN" : String(format: "%.\(digits)g", value)
    }

    /// A box plot (quartiles, whiskers at 1.5 IQR, outliers) of one class's Dice for every method.
    private func boxPlotSVG(classIndex: Int) -> String {
        let width = 120 + 90 * methods.count, height = 260
        let (top, bottom) = (20.0, 220.0)
        func y(_ v: Double) -> Double { bottom - (bottom - top) * min(1, max(0, v)) }
        var svg = "<svg class=\"boxplot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\">"
        svg += "<text x=\"10\" y=\"14\" font-size=\"13\">\(escape(classNames[classIndex])): Dice</text>"
        for tick in stride(from: 0.0, through: 1.0, by: 0.25) {
            svg += "<line x1=\"50\" x2=\"\(width - 10)\" y1=\"\(y(tick))\" y2=\"\(y(tick))\" stroke=\"#eee\"/>"
            svg += "<text x=\"10\" y=\"\(y(tick) + 4)\" font-size=\"10\">\(tick)</text>"
        }
        for (index, method) in methods.enumerated() {
            let values = column(method.dice, classIndex).sorted()
            let x = 80.0 + 90.0 * Double(index)
            svg += "<text x=\"\(x - 25)\" y=\"\(height - 20)\" font-size=\"10\">\(escape(String(method.name.prefix(14))))</text>"
            guard !values.isEmpty else { continue }
            let floats = values.map(Float.init)
            let (q1, q2, q3) = (Overlay.percentile(floats, 0.25), Overlay.percentile(floats, 0.5),
                                Overlay.percentile(floats, 0.75))
            let iqr = Double(q3 - q1)
            let low = values.first { $0 >= Double(q1) - 1.5 * iqr } ?? values[0]
            let high = values.last { $0 <= Double(q3) + 1.5 * iqr } ?? values[values.count - 1]
            svg += "<line x1=\"\(x)\" x2=\"\(x)\" y1=\"\(y(low))\" y2=\"\(y(high))\" stroke=\"#555\"/>"
            svg += "<rect x=\"\(x - 20)\" y=\"\(y(Double(q3)))\" width=\"40\" height=\"\(max(1, y(Double(q1)) - y(Double(q3))))\" "
                + "fill=\"hsl(\(index * 67 % 360),60%,70%)\" stroke=\"#333\"/>"
            svg += "<line x1=\"\(x - 20)\" x2=\"\(x + 20)\" y1=\"\(y(Double(q2)))\" y2=\"\(y(Double(q2)))\" stroke=\"#000\" stroke-width=\"2\"/>"
            for outlier in values where outlier < low || outlier > high {
                svg += "<circle cx=\"\(x)\" cy=\"\(y(outlier))\" r=\"2\" fill=\"#c00\"/>"
            }
        }
        return svg + "</svg>\n"
    }

    private func casesHTML() -> String {
        guard let first = methods.first else { return "" }
        func meanForeground(_ row: [Double]) -> Double {
            let values = foregroundClasses.compactMap { $0 < row.count ? row[$0] : nil }.filter { $0.isFinite }
            return values.isEmpty ? .nan : values.reduce(0, +) / Double(values.count)
        }
        let order = pictures.indices.sorted { a, b in
            let (da, db) = (caseDice(first, pictures[a].caseID).map(meanForeground) ?? .nan,
                            caseDice(first, pictures[b].caseID).map(meanForeground) ?? .nan)
            return (da.isNaN ? 2 : da) < (db.isNaN ? 2 : db)
        }
        var html = ""
        for index in order {
            let picture = pictures[index]
            html += "<div class=\"case\"><h3>\(escape(picture.caseID))</h3>"
            html += figure(picture.image, "image") + figure(picture.reference, "reference")
            for (method, png) in zip(methods, picture.methods) {
                let dice = caseDice(method, picture.caseID).map(meanForeground).map { format($0, digits: 3) } ?? "—"
                html += figure(png, "\(method.name) (Dice \(dice))")
            }
            html += "</div>\n"
        }
        return html
    }

    private func caseDice(_ method: Method, _ caseID: String) -> [Double]? {
        guard let index = caseIDs.firstIndex(of: caseID), index < method.dice.count else { return nil }
        return method.dice[index]
    }

    private func figure(_ png: Data, _ caption: String) -> String {
        "<figure><img alt=\"\(escape(caption))\" src=\"data:image/png;base64,\(png.base64EncodedString())\">"
            + "<figcaption>\(escape(caption))</figcaption></figure>"
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
