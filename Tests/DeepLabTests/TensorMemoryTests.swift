@testable import DeepLab
import Testing

/// Large tensor buffers are reused by size and the idle ones kept are bounded; small ones are aligned.
@Suite struct TensorMemoryTests {
    @Test func aFreedLargeBufferServesTheNextRequestOfItsSize() throws {
        let memory = TensorMemory(idleLimit: 16 << 20)
        let bytes = 3 << 20 + 100
        let first = try #require(memory.allocate(bytes))
        first.storeBytes(of: 7, as: Int.self)
        memory.release(first, bytes: bytes)
        #expect(memory.idleByteCount == TensorMemory.footprint(bytes))
        let other = try #require(memory.allocate(5 << 20))
        #expect(other != first)
        let again = try #require(memory.allocate(bytes))
        #expect(again == first)
        #expect(memory.idleByteCount == 0)
        memory.release(again, bytes: bytes)
        memory.release(other, bytes: 5 << 20)
        #expect(memory.idleByteCount == TensorMemory.footprint(bytes) + TensorMemory.footprint(5 << 20))
    }

    @Test func idleBuffersBeyondTheLimitGoBackOldestFirst() throws {
        let memory = TensorMemory(idleLimit: 5 << 20)
        let buffers = try (0..<3).map { _ in try #require(memory.allocate(2 << 20)) }
        for buffer in buffers { memory.release(buffer, bytes: 2 << 20) }
        #expect(memory.idleByteCount == 4 << 20)
        // The newest two stay; the oldest was unmapped.
        let reused = try [#require(memory.allocate(2 << 20)), #require(memory.allocate(2 << 20))]
        #expect(Set(reused) == Set(buffers.suffix(2)))
        for buffer in reused { memory.release(buffer, bytes: 2 << 20) }
        // A buffer larger than the limit is never kept.
        let huge = try #require(memory.allocate(6 << 20))
        memory.release(huge, bytes: 6 << 20)
        #expect(memory.idleByteCount == 4 << 20)
    }

    @Test func smallBuffersAreAlignedForVectorLoads() throws {
        let memory = TensorMemory()
        for bytes in [0, 4, 100, 4096, 1 << 19] {
            let pointer = try #require(memory.allocate(bytes))
            #expect(Int(bitPattern: pointer) % 64 == 0)
            memory.release(pointer, bytes: bytes)
        }
        #expect(memory.idleByteCount == 0)
    }
}
