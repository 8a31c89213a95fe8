import Foundation

/// A usage error on the command line: one clear line for stderr; the CLI exits with status 2.
public struct UsageError: Error, CustomStringConvertible, Equatable {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// Parsed arguments of one command, with values already validated against their `OptionSpec.Kind`.
public struct ParsedArguments: Sendable {
    public let command: String
    public private(set) var positionals: [String] = []
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []

    init(command: String) { self.command = command }

    /// Whether a flag was given.
    public func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The last value of an option, or nil.
    public func string(_ name: String) -> String? { values[name]?.last }

    /// Every value of a repeatable option, in order.
    public func strings(_ name: String) -> [String] { values[name] ?? [] }

    /// Whether an option was given at all (with or without a value).
    public func has(_ name: String) -> Bool { values[name] != nil || flags.contains(name) }

    /// An integer option (validated while parsing).
    public func int(_ name: String) -> Int? { string(name).flatMap { Int($0) } }

    /// A floating-point option (validated while parsing).
    public func double(_ name: String) -> Double? { string(name).flatMap { Double($0) } }

    /// A choice option as the library type its words come from (validated while parsing).
    public func choice<T: RawRepresentable>(_ name: String, as type: T.Type = T.self) -> T? where T.RawValue == String {
        string(name).flatMap(T.init(rawValue:))
    }

    /// A comma-separated number list (validated while parsing).
    public func doubles(_ name: String) -> [Double]? {
        string(name).map { $0.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) } }
    }

    /// A positional argument by index, or nil.
    public func positional(_ index: Int) -> String? { index < positionals.count ? positionals[index] : nil }

    /// Parses `arguments` (without the program and command names) against `spec`.
    ///
    /// Accepts `--name value`, `--name=value`, flags, and `--` to end options. Unknown options, missing or
    /// malformed values, missing required options and surplus or missing positionals are `UsageError`s whose
    /// message names the command and the option.
    public static func parse(_ arguments: [String], spec: CommandSpec) throws -> ParsedArguments {
        var parsed = ParsedArguments(command: spec.name)
        let options = Dictionary(spec.options.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let prefix = "slicelab \(spec.name)"
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" || Double(argument) != nil {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            guard argument.hasPrefix("--") else {
                throw UsageError("\(prefix): unknown option '\(argument)' (options are spelled --name)")
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = options[name] else {
                throw UsageError("\(prefix): unknown option '--\(name)'; see 'slicelab \(spec.name) --help'")
            }
            if option.kind == .flag {
                guard inlineValue == nil else { throw UsageError("\(prefix): --\(name) takes no value") }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count, !isOptionLike(arguments[index]) else {
                    throw UsageError("\(prefix): --\(name) needs a value (\(option.valueName))")
                }
                value = arguments[index]
                index += 1
            }
            try validate(value, for: option, prefix: prefix)
            if parsed.values[name] != nil && !option.isRepeatable {
                throw UsageError("\(prefix): --\(name) given more than once")
            }
            parsed.values[name, default: []].append(value)
        }
        for option in spec.options where option.isRequired && !parsed.has(option.name) {
            throw UsageError("\(prefix): missing required option --\(option.name) \(option.valueName)")
        }
        let required = spec.positionals.filter { !$0.isOptional }.count
        if parsed.positionals.count < required {
            let missing = spec.positionals[parsed.positionals.count].name
            throw UsageError("\(prefix): missing argument \(missing)")
        }
        if parsed.positionals.count > spec.positionals.count, spec.positionals.last?.isVariadic != true {
            throw UsageError("\(prefix): unexpected argument '\(parsed.positionals[spec.positionals.count])'")
        }
        return parsed
    }

    private static func isOptionLike(_ argument: String) -> Bool {
        argument.hasPrefix("--") && argument.count > 2
    }

    private static func describe<T: Comparable>(_ lower: T, _ upper: T, _ unbounded: T) -> String {
        upper == unbounded ? "is below the minimum \(lower)" : "is outside \(lower)...\(upper)"
    }

    private static func validate(_ value: String, for option: OptionSpec, prefix: String) throws {
        let name = "--\(option.name)"
        switch option.kind {
        case .flag, .string:
            if value.isEmpty { throw UsageError("\(prefix): \(name) needs a non-empty value") }
        case .int(let range):
            guard let number = Int(value) else { throw UsageError("\(prefix): \(name): '\(value)' is not an integer") }
            if let range, !range.contains(number) {
                throw UsageError(
                    "\(prefix): \(name): \(number) " + describe(range.lowerBound, range.upperBound, Int.max))
            }
        case .double(let range):
            guard let number = Double(value), number.isFinite else {
                throw UsageError("\(prefix): \(name): '\(value)' is not a number")
            }
            if let range, !range.contains(number) {
                throw UsageError(
                    "\(prefix): \(name): \(value) "
                        + describe(range.lowerBound, range.upperBound, Double.greatestFiniteMagnitude))
            }
        case .choice(let words):
            guard words.contains(value) else {
                throw UsageError("\(prefix): \(name): '\(value)' is not one of \(words.joined(separator: ", "))")
            }
        case .doubles:
            let parts = value.split(separator: ",", omittingEmptySubsequences: false)
            guard !parts.isEmpty,
                parts.allSatisfy({ Double($0.trimmingCharacters(in: .whitespaces))?.isFinite == true })
            else {
                throw UsageError("\(prefix): \(name): '\(value)' is not a comma-separated list of numbers")
            }
        }
    }
}
