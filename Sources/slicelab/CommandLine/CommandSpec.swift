/// A command-line option, declared once: parsing, validation and help all come from this declaration.
public struct OptionSpec: Sendable {
    /// What an option's value must be; checked while parsing, so a bad value is a usage error.
    public enum Kind: Sendable, Equatable {
        /// Present or absent; takes no value.
        case flag
        case string
        case int(ClosedRange<Int>? = nil)
        case double(ClosedRange<Double>? = nil)
        /// One of a fixed set of words.
        case choice([String])
        /// Comma-separated numbers, e.g. `--spacing 2.5,0.8,0.8`.
        case doubles
    }

    /// The long name without dashes: `out` for `--out`.
    public let name: String
    public let kind: Kind
    /// The placeholder shown in help: `--out FILE`.
    public let valueName: String
    public let help: String
    public let isRequired: Bool
    /// May be given more than once; every value is kept in order.
    public let isRepeatable: Bool
    /// Shown in help; the command applies it (the parser does not invent values).
    public let defaultDescription: String?

    public init(
        _ name: String, _ kind: Kind = .string, valueName: String? = nil, help: String,
        required: Bool = false, repeatable: Bool = false, default defaultDescription: String? = nil
    ) {
        self.name = name
        self.kind = kind
        self.valueName =
            valueName
            ?? {
                switch kind {
                case .flag: return ""
                case .int: return "N"
                case .double: return "X"
                case .choice(let words): return words.joined(separator: "|")
                case .doubles: return "X,Y,…"
                case .string: return name.uppercased()
                }
            }()
        self.help = help
        self.isRequired = required
        self.isRepeatable = repeatable
        self.defaultDescription = defaultDescription
    }
}

extension OptionSpec.Kind {
    /// The words of a library's `CaseIterable` type, in its declaration order: the CLI's list is derived from
    /// the type, so it cannot leave out a case the library implements.
    public static func choice<T: CaseIterable & RawRepresentable>(of type: T.Type) -> Self where T.RawValue == String {
        .choice(T.allCases.map(\.rawValue))
    }
}

/// A positional argument.
public struct PositionalSpec: Sendable {
    public let name: String
    public let help: String
    public let isOptional: Bool
    /// The last positional may take every remaining argument (`merge PART…`).
    public let isVariadic: Bool

    public init(_ name: String, help: String, optional: Bool = false, variadic: Bool = false) {
        self.name = name
        self.help = help
        self.isOptional = optional
        self.isVariadic = variadic
    }
}

/// A subcommand: its name, what it does, its positionals and options.
public struct CommandSpec: Sendable {
    public let name: String
    public let summary: String
    public let positionals: [PositionalSpec]
    public let options: [OptionSpec]
    /// Extra paragraphs for `--help`: examples, file layouts.
    public let discussion: String?

    public init(
        name: String, summary: String, positionals: [PositionalSpec] = [], options: [OptionSpec] = [],
        discussion: String? = nil
    ) {
        self.name = name
        self.summary = summary
        self.positionals = positionals
        self.options = options
        self.discussion = discussion
    }

    /// The `--help` text, generated from the declarations.
    public func helpText(program: String = "slicelab") -> String {
        var usage = "\(program) \(name)"
        for positional in positionals {
            let shown = positional.name + (positional.isVariadic ? "…" : "")
            usage += positional.isOptional ? " [\(shown)]" : " \(shown)"
        }
        for option in options where option.isRequired {
            usage += " --\(option.name)" + (option.kind == .flag ? "" : " \(option.valueName)")
        }
        if options.contains(where: { !$0.isRequired }) { usage += " [options]" }
        var lines = ["\(summary)", "", "Usage: \(usage)"]
        if !positionals.isEmpty {
            lines += ["", "Arguments:"]
            lines += positionals.map { Self.row($0.name, $0.help) }
        }
        lines += ["", "Options:"]
        for option in options {
            var left = "--\(option.name)"
            if option.kind != .flag { left += " \(option.valueName)" }
            var text = option.help
            if option.isRequired { text += " (required)" }
            if option.isRepeatable { text += " (repeatable)" }
            if let value = option.defaultDescription { text += " [default: \(value)]" }
            lines.append(Self.row(left, text))
        }
        lines.append(Self.row("-h, --help", "Show this help."))
        if let discussion { lines += ["", discussion] }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func row(_ left: String, _ right: String) -> String {
        let padded = left.count < 26 ? left.padding(toLength: 26, withPad: " ", startingAt: 0) : left + "  "
        return "  " + padded + right
    }
}
