import Testing

@testable import DeepLab

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

    @Test func keepingTheWorkingSetBoundsIdleByEightTimesThePeakInUse() throws {
        #expect(TensorMemory.workingSetFactor == 8)
        let memory = TensorMemory(idleLimit: 5 << 20)
        memory.keepWorkingSet()
        let buffers = try (0..<3).map { _ in try #require(memory.allocate(2 << 20)) }
        for buffer in buffers { memory.release(buffer, bytes: 2 << 20) }
        // 6 MiB were live at once, so up to 8 × 6 MiB may idle: all three stay for reuse.
        #expect(memory.idleByteCount == 6 << 20)
        let reused = try buffers.indices.map { _ in try #require(memory.allocate(2 << 20)) }
        #expect(Set(reused) == Set(buffers))
        for buffer in reused { memory.release(buffer, bytes: 2 << 20) }
        // One at a time, 1…20 MiB: at most 20 MiB live, so 160 MiB may idle; the oldest (1…10 MiB) go.
        let single = TensorMemory(idleLimit: 5 << 20)
        single.keepWorkingSet()
        for mebibytes in 1...20 {
            let buffer = try #require(single.allocate(mebibytes << 20))
            single.release(buffer, bytes: mebibytes << 20)
        }
        #expect(single.idleByteCount == (11...20).reduce(0, +) << 20)
    }

    @Test func smallBuffersAreAlignedForVectorLoads() throws {
        let memory = TensorMemory()
        for bytes in [0, 4, 100, 4096, TensorMemory.largeSize - 1] {
            let pointer = try #require(memory.allocate(bytes))
            #expect(Int(bitPattern: pointer) % 64 == 0)
            memory.release(pointer, bytes: bytes)
        }
        #expect(memory.idleByteCount == 0)
    }
}
