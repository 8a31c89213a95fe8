import Classical
import DICOM
import DeepLab
import DeepLabTraining
import SliceLabSupport

/// `slicelab --version`: the version, and the instruction set the engine's kernels run at on this CPU (which
/// `ONEDNN_MAX_CPU_ISA` can cap; `.ci/run` reads it to test the lower levels too), and the fp32 convolution
/// and int8 convolution strategies that ISA's `ConvolutionStrategyTable` entry allows.
public var versionDescription: String {
    "slicelab \(sliceLabVersion)\nDCMTK \(dcmtkVersion), oneDNN \(oneDNNVersion)\noneDNN ISA: \(oneDNNEffectiveISA)"
        + "\nfp32 convolutions: \(ConvolutionStrategyTable.effective.summary)"
        + "\nint8 3 × 3 convolutions: \(ConvolutionStrategyTable.effective.int8Summary)"
        + "\ndense CRF kernels: \(DenseCRF.KernelPath.automatic.rawValue)"
}

/// The library types whose cases the command line's choice lists are derived from, re-exported for the
/// executable (which imports only this target).
public typealias Architecture = DeepLabConfiguration.Architecture
public typealias DeepLabDecoder = DeepLabConfiguration.Decoder
public typealias OptimizerConfiguration = DeepLabTraining.OptimizerConfiguration
public typealias LossConfiguration = DeepLabTraining.LossConfiguration

/// Bounds on what the readers of outside files allocate (`--max-memory`), re-exported for the executable.
public typealias ReadLimits = SliceLabSupport.ReadLimits
