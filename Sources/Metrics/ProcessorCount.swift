#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The processors this process may use. Rests on `sysconf(_SC_NPROCESSORS_ONLN)`.
enum ProcessorCount {
    static var active: Int {
        #if canImport(Glibc) || canImport(Darwin)
        return Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        #else
        return 1
        #endif
    }
}
