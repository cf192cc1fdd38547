"""Models: UT encoder-decoder, language model, encoder classifier, and the LSTM baseline."""

from .base import LoadError, ModelOutput, PretrainedModel, from_pretrained
from .lstm import LSTMSeq2Seq
from .transformer import UniversalTransformer, UTEncoderClassifier, UTLanguageModel, sequence_loss

__all__ = [
    "LSTMSeq2Seq", "LoadError", "ModelOutput", "PretrainedModel", "UTEncoderClassifier",
    "UTLanguageModel", "UniversalTransformer", "from_pretrained", "sequence_loss",
]
