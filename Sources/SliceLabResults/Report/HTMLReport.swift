import Foundation
import ImageFiles
import Metrics
import SliceLabDatasets
import SliceLabIO
import SliceLabSupport

/// A static, self-contained HTML report of a comparison: the summary table, per-class box plots (inline SVG),
/// and per case the image with the reference and each method's overlay, sorted from worst to best Dice of the
/// first method. It needs no network: images are embedded as base64 PNG. A 3-D case with a `SliceScroller` is
/// shown as one instead: a canvas, a slice slider (also the arrow keys), an opacity slider and a switch between
/// the reference and every method's overlay, driven by a small inline script.
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

        /// A run's per-case Dice, IoU and HD95, with the Dice p-values of its comparison to the first method.
        public init(_ run: ResultsRun, against comparison: ResultsComparison?) {
            func perCase(_ metric: MetricName) -> [[Double]] {
                let columns = (0..<run.classCount).map { run.values(metric, classIndex: $0) }
                return (0..<run.caseCount).map { i in columns.map { $0[i] } }
            }
            self.init(
                name: run.name, dice: perCase(.dice), iou: perCase(.iou), hd95: perCase(.hd95),
                pValues: comparison.map { comparison in
                    (0..<run.classCount).map { comparison.rows[.dice]?[$0].wilcoxon.pValue ?? .nan }
                })
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
    /// Slice scrollers of 3-D cases, matched to `pictures` by case ID; those cases show no static figures.
    public var scrollers: [SliceScroller] = []
    /// A sentence printed above the cases about the scrollers (how many of the 3-D cases, at what resolution).
    public var scrollerNote: String?
    /// Runs whose class probabilities were kept: their reliability bins over every case, drawn as one reliability
    /// diagram per class.
    public var reliability: [(run: String, bins: ReliabilityBins)] = []
    /// Sections before the cases, as (heading, HTML) (`train --fold all --report`'s folds).
    public var sections: [(heading: String, html: String)] = []

    public init(title: String, classNames: [String], caseIDs: [String], methods: [Method], pictures: [CasePictures]) {
        (self.title, self.classNames, self.caseIDs, self.methods, self.pictures) = (
            title, classNames, caseIDs, methods,
            pictures
        )
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
        body +=
            "<p>\(caseIDs.count) cases, \(classNames.count) classes, methods: "
            + methods.map { escape($0.name) }.joined(separator: ", ") + ".</p>\n"
        body += tableHTML()
        body += "<h2>Dice per class</h2>\n<div class=\"plots\">\n"
        for classIndex in foregroundClasses {
            body += boxPlotSVG(classIndex: classIndex)
        }
        body += "</div>\n"
        if !reliability.isEmpty {
            body += "<h2>Calibration</h2>\n<p>Reliability diagrams: voxels binned by the predicted probability of "
            body += "the class (\(reliability[0].bins.binCount) equal-width bins); a calibrated model follows the "
            body += "diagonal. ECE over every voxel of the cases.</p>\n<div class=\"plots\">\n"
            for classIndex in foregroundClasses { body += reliabilitySVG(classIndex: classIndex) }
            body += "</div>\n"
        }
        for section in sections { body += "<h2>\(escape(section.heading))</h2>\n\(section.html)\n" }
        if !pictures.isEmpty {
            body += "<h2>Cases, worst to best</h2>\n"
            if let scrollerNote { body += "<p class=\"scroller-note\">\(escape(scrollerNote))</p>\n" }
            body += casesHTML()
        }
        if !scrollers.isEmpty { body += "<script>\n\(Self.scrollerScript)</script>\n" }
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
            .scroller { display: flex; gap: 1em; align-items: flex-start; outline: none; }
            .scroller canvas { image-rendering: pixelated; background: #000; }
            .scroller.active canvas { box-shadow: 0 0 0 2px #48c; }
            .scroller .controls { display: flex; flex-direction: column; gap: 0.5em; font-size: 0.9em; }
            .scroller fieldset { border: 1px solid #ccc; }
            .scroller fieldset label { display: block; }
            </style></head><body>
            \(body)</body></html>

            """
    }

    private var foregroundClasses: [Int] { classNames.count > 1 ? Array(1..<classNames.count) : [0] }

    private func tableHTML() -> String {
        var html =
            "<table id=\"summary\"><tr><th>class</th><th>method</th><th>Dice</th><th>IoU</th><th>HD95 (mm)</th>"
            + "<th>p vs \(escape(methods.first?.name ?? ""))</th></tr>\n"
        for classIndex in foregroundClasses {
            for method in methods {
                let p =
                    method.pValues.map {
                        TableText.pValue($0[classIndex], pairs: column(method.dice, classIndex).count)
                    }
                    ?? "—"
                html +=
                    "<tr><td>\(escape(classNames[classIndex]))</td><td>\(escape(method.name))</td>"
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
        // One case has no spread: "± 0" would claim one.
        guard finite.count > 1 else { return "\(format(mean, digits: 3)) ± — (one case)" }
        let variance = finite.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(finite.count - 1)
        return "\(format(mean, digits: 3)) ± \(format(variance.squareRoot(), digits: 3))"
    }

    private func format(_ value: Double, digits: Int) -> String {
        value.isNaN ? "NaN" : String(format: "%.\(digits)g", value)
    }

    /// A box plot (quartiles, whiskers at 1.5 IQR, outliers) of one class's Dice for every method.
    private func boxPlotSVG(classIndex: Int) -> String {
        // Method names are written whole, slanted down to the right from under their boxes (about 5.2 px a
        // character at 10 px): the plot grows to fit the longest.
        let slant = Double(methods.map(\.name.count).max() ?? 0) * 5.2
        let width = 120 + 90 * methods.count + Int((slant * cos(35 * Double.pi / 180)).rounded(.up))
        let (top, bottom) = (20.0, 220.0)
        let height = Int(bottom) + 24 + Int((slant * sin(35 * Double.pi / 180)).rounded(.up))
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
            let (labelX, labelY) = (x - 8, bottom + 14)
            svg +=
                "<text x=\"\(labelX)\" y=\"\(labelY)\" font-size=\"10\" "
                + "transform=\"rotate(35 \(labelX) \(labelY))\">\(escape(method.name))</text>"
            guard !values.isEmpty else { continue }
            let (q1, q2, q3) = (
                Percentile.ofSorted(values, 25), Percentile.ofSorted(values, 50),
                Percentile.ofSorted(values, 75)
            )
            let iqr = q3 - q1
            let low = values.first { $0 >= q1 - 1.5 * iqr } ?? values[0]
            let high = values.last { $0 <= q3 + 1.5 * iqr } ?? values[values.count - 1]
            svg += "<line x1=\"\(x)\" x2=\"\(x)\" y1=\"\(y(low))\" y2=\"\(y(high))\" stroke=\"#555\"/>"
            svg +=
                "<rect x=\"\(x - 20)\" y=\"\(y(q3))\" width=\"40\" height=\"\(max(1, y(q1) - y(q3)))\" "
                + "fill=\"hsl(\(index * 67 % 360),60%,70%)\" stroke=\"#333\"/>"
            svg +=
                "<line x1=\"\(x - 20)\" x2=\"\(x + 20)\" y1=\"\(y(q2))\" y2=\"\(y(q2))\" stroke=\"#000\" stroke-width=\"2\"/>"
            for outlier in values where outlier < low || outlier > high {
                svg += "<circle cx=\"\(x)\" cy=\"\(y(outlier))\" r=\"2\" fill=\"#c00\"/>"
            }
        }
        return svg + "</svg>\n"
    }

    /// One class's reliability diagram: each run's (mean predicted probability, observed frequency) per non-empty
    /// bin, over the diagonal.
    private func reliabilitySVG(classIndex c: Int) -> String {
        let (left, top, side) = (40.0, 24.0, 200.0)
        let width = Int(left + side) + 20 + 12 * (reliability.map(\.run.count).max() ?? 0) / 2 + 90
        func x(_ v: Double) -> Double { left + side * v }
        func y(_ v: Double) -> Double { top + side * (1 - v) }
        var svg = "<svg class=\"reliability\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" "
        svg += "height=\"\(Int(top + side) + 36)\">"
        svg += "<text x=\"10\" y=\"14\" font-size=\"13\">\(escape(classNames[c])): reliability</text>"
        svg += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(side)\" height=\"\(side)\" fill=\"none\" stroke=\"#ccc\"/>"
        svg +=
            "<line x1=\"\(x(0))\" y1=\"\(y(0))\" x2=\"\(x(1))\" y2=\"\(y(1))\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>"
        svg += "<text x=\"\(left)\" y=\"\(top + side + 14)\" font-size=\"10\">0</text>"
        svg += "<text x=\"\(left + side - 6)\" y=\"\(top + side + 14)\" font-size=\"10\">1</text>"
        svg += "<text x=\"\(left + side / 2 - 30)\" y=\"\(top + side + 28)\" font-size=\"10\">predicted</text>"
        svg += "<text x=\"4\" y=\"\(top + 10)\" font-size=\"10\">observed</text>"
        for (index, entry) in reliability.enumerated() where c < entry.bins.classCount {
            let colour = "hsl(\(index * 67 % 360),60%,45%)"
            let points = entry.bins.points(c).map { "\(x($0.confidence)),\(y($0.frequency))" }
            svg +=
                "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"1.5\" points=\"\(points.joined(separator: " "))\"/>"
            for point in points {
                let xy = point.split(separator: ",")
                svg += "<circle cx=\"\(xy[0])\" cy=\"\(xy[1])\" r=\"2\" fill=\"\(colour)\"/>"
            }
            let legendY = top + 12 + 14 * Double(index)
            svg += "<text x=\"\(left + side + 10)\" y=\"\(legendY)\" font-size=\"10\" fill=\"\(colour)\">"
            svg += "\(escape(entry.run)) (ECE \(format(entry.bins.expectedCalibrationError(c), digits: 3)))</text>"
        }
        return svg + "</svg>\n"
    }

    /// The case IDs of `pictures` in the order the report shows them: worst to best mean foreground Dice of the
    /// first method, cases without a Dice last.
    public func caseOrder() -> [String] {
        guard let first = methods.first else { return pictures.map(\.caseID) }
        let dice = pictures.map { caseDice(first, $0.caseID).map(meanForeground) ?? .nan }
        return pictures.indices.sorted { a, b in
            (dice[a].isNaN ? 2 : dice[a], a) < (dice[b].isNaN ? 2 : dice[b], b)
        }.map { pictures[$0].caseID }
    }

    private func meanForeground(_ row: [Double]) -> Double {
        let values = foregroundClasses.compactMap { $0 < row.count ? row[$0] : nil }.filter { $0.isFinite }
        return values.isEmpty ? .nan : values.reduce(0, +) / Double(values.count)
    }

    private func casesHTML() -> String {
        guard !methods.isEmpty else { return "" }
        var (html, scrollerNumber) = ("", 0)
        for caseID in caseOrder() {
            guard let picture = pictures.first(where: { $0.caseID == caseID }) else { continue }
            if let scroller = scrollers.first(where: { $0.caseID == caseID }) {
                html += scrollerHTML(scroller, number: scrollerNumber)
                scrollerNumber += 1
                continue
            }
            html += "<div class=\"case\"><h3>\(escape(picture.caseID))</h3>"
            html += figure(picture.image, "image") + figure(picture.reference, "reference")
            for (method, png) in zip(methods, picture.methods) {
                html += figure(png, "\(method.name) (Dice \(diceText(method, picture.caseID)))")
            }
            html += "</div>\n"
        }
        return html
    }

    private func diceText(_ method: Method, _ caseID: String) -> String {
        caseDice(method, caseID).map(meanForeground).map { format($0, digits: 3) } ?? "—"
    }

    // MARK: - Slice scrollers

    /// One 3-D case as a scroller; `number` makes its radio group's name unique on the page. The tile is drawn
    /// 1:1 into the canvas and scaled by CSS to about 320 px wide at the slice's physical aspect.
    private func scrollerHTML(_ scroller: SliceScroller, number: Int) -> String {
        var (width, height) = (Double(max(320, scroller.tileColumns)), 0.0)
        height = width * scroller.aspect
        if height > 480 { (width, height) = (480 / scroller.aspect, 480) }
        let count = scroller.sliceIndices.count
        var html =
            "<div class=\"case\"><h3>\(escape(scroller.caseID))</h3>\n"
            + "<div class=\"scroller\" tabindex=\"0\" data-case=\"\(escape(scroller.caseID))\" "
            + "data-frames=\"\(scroller.frames)\" data-slices=\""
            + scroller.sliceIndices.map(String.init).joined(separator: ",") + "\" "
            + "data-tile-rows=\"\(scroller.tileRows)\" data-tile-columns=\"\(scroller.tileColumns)\" "
            + "data-grid-columns=\"\(scroller.gridColumns)\">\n"
            + "<canvas width=\"\(scroller.tileColumns)\" height=\"\(scroller.tileRows)\" "
            + "style=\"width:\(Int(width.rounded()))px;height:\(Int(height.rounded()))px\"></canvas>\n"
            + "<div class=\"controls\">"
            + "<label>slice <input type=\"range\" class=\"slice\" min=\"0\" max=\"\(count - 1)\" "
            + "value=\"\(count / 2)\"></label><output class=\"slice-readout\"></output>"
            + "<label>overlay opacity <input type=\"range\" class=\"opacity\" min=\"0\" max=\"100\" "
            + "value=\"50\"></label><fieldset><legend>overlay</legend>"
        for (index, layer) in scroller.layers.enumerated() {
            var caption = layer.name
            if let method = methods.first(where: { $0.name == layer.name }) {
                caption += " (Dice \(diceText(method, scroller.caseID)))"
            }
            html +=
                "<label><input type=\"radio\" class=\"layer\" name=\"layer-\(number)\" value=\"\(index)\""
                + (index == 0 ? " checked" : "") + "> \(escape(caption))</label>"
        }
        html += "</fieldset><small>slider or ← →: slice (Shift: 10 slices); keys 1–9: overlay"
        if scroller.reduction > 1 { html += "; shown at 1/\(scroller.reduction) resolution in-plane" }
        if count < scroller.frames { html += "; \(count) of \(scroller.frames) slices" }
        html +=
            "</small></div>\n<img class=\"sprite-image\" hidden alt=\"\" src=\"data:image/png;base64,"
            + scroller.image.base64EncodedString() + "\">\n"
        for layer in scroller.layers {
            html +=
                "<img class=\"sprite-layer\" hidden alt=\"\" src=\"data:image/png;base64,"
                + layer.sprite.base64EncodedString() + "\">\n"
        }
        return html + "</div></div>\n"
    }

    /// Draws each scroller's current slice and overlay; the arrow keys (Shift: 10 slices) and keys 1–9 act on the
    /// active scroller: the one last pointed at, clicked or focused, at first the first one.
    static let scrollerScript = """
        (function () {
          const scrollers = [];
          let active = null;
          function activate(scroller) {
            if (active) active.root.classList.remove('active');
            active = scroller;
            scroller.root.classList.add('active');
          }
          function setup(root) {
            const canvas = root.querySelector('canvas'), context = canvas.getContext('2d');
            const slider = root.querySelector('input.slice'), opacity = root.querySelector('input.opacity');
            const readout = root.querySelector('output.slice-readout');
            const radios = Array.from(root.querySelectorAll('input.layer'));
            const image = root.querySelector('img.sprite-image');
            const layers = Array.from(root.querySelectorAll('img.sprite-layer'));
            const slices = root.dataset.slices.split(',').map(Number);
            const tileRows = +root.dataset.tileRows, tileColumns = +root.dataset.tileColumns;
            const gridColumns = +root.dataset.gridColumns;
            function layer() { return Math.max(0, radios.findIndex(r => r.checked)); }
            function draw() {
              const tile = +slider.value;
              const x = (tile % gridColumns) * tileColumns, y = Math.floor(tile / gridColumns) * tileRows;
              context.imageSmoothingEnabled = false;
              context.globalAlpha = 1;
              context.clearRect(0, 0, tileColumns, tileRows);
              context.drawImage(image, x, y, tileColumns, tileRows, 0, 0, tileColumns, tileRows);
              context.globalAlpha = +opacity.value / 100;
              if (layers.length) context.drawImage(layers[layer()], x, y, tileColumns, tileRows,
                                                   0, 0, tileColumns, tileRows);
              context.globalAlpha = 1;
              readout.value = 'slice ' + (slices[tile] + 1) + ' of ' + root.dataset.frames;
              root.dataset.shownSlice = slices[tile];
              root.dataset.shownLayer = layer();
            }
            const scroller = {
              root: root,
              move(step) {
                slider.value = Math.min(+slider.max, Math.max(0, +slider.value + step));
                draw();
              },
              select(index) {
                if (index < radios.length) { radios[index].checked = true; draw(); }
              },
            };
            slider.addEventListener('input', draw);
            opacity.addEventListener('input', draw);
            radios.forEach(r => r.addEventListener('change', draw));
            ['pointerenter', 'pointerdown', 'focusin'].forEach(e => root.addEventListener(e, () => activate(scroller)));
            draw();
            return scroller;
          }
          window.addEventListener('load', function () {
            document.querySelectorAll('.scroller').forEach(root => scrollers.push(setup(root)));
            if (scrollers.length) activate(scrollers[0]);
            document.body.dataset.scrollersReady = scrollers.length;
          });
          document.addEventListener('keydown', function (event) {
            if (!active || event.altKey || event.ctrlKey || event.metaKey) return;
            const arrow = event.key.startsWith('Arrow');
            if (arrow && event.target && event.target.tagName === 'INPUT') return;  // sliders and radios: natively
            const step = event.shiftKey ? 10 : 1;
            if (event.key === 'ArrowRight' || event.key === 'ArrowUp') active.move(step);
            else if (event.key === 'ArrowLeft' || event.key === 'ArrowDown') active.move(-step);
            else if (/^[1-9]$/.test(event.key)) active.select(+event.key - 1);
            else return;
            event.preventDefault();
          });
        })();

        """

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
