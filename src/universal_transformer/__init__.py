"""Universal Transformer (Dehghani et al., ICLR 2019) in PyTorch.

>>> from universal_transformer import UTConfig, UniversalTransformer
>>> model = UniversalTransformer(UTConfig(vocab_size=16, d_model=32, num_heads=4, d_ff=64, act=True))
"""

from .config import (
    ConfigError,
    LSTMConfig,
    StoryQAConfig,
    UTClassifierConfig,
    UTConfig,
    load_config,
    transformer_config,
)
from .generation import beam_search, generate
from .models import (
    LoadError,
    LSTMLanguageModel,
    LSTMSeq2Seq,
    ModelOutput,
    UniversalTransformer,
    UTEncoderClassifier,
    UTLanguageModel,
    UTStoryQA,
    from_pretrained,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError", "LSTMConfig", "LSTMLanguageModel", "LSTMSeq2Seq", "LoadError", "ModelOutput", "StoryQAConfig",
    "UTClassifierConfig", "UTConfig", "UTEncoderClassifier", "UTLanguageModel", "UTStoryQA", "UniversalTransformer",
    "beam_search", "from_pretrained", "generate", "load_config", "transformer_config",
]
