"""Models: UT encoder-decoder, language model, encoder classifier, and the LSTM baselines."""

from .base import MODEL_CLASSES as MODEL_CLASSES_BY_NAME
from .base import LoadError, ModelOutput, PretrainedModel, from_pretrained
from .lstm import LSTMLanguageModel, LSTMSeq2Seq
from .story_qa import FactEncoder, UTStoryQA
from .transformer import UniversalTransformer, UTEncoderClassifier, UTLanguageModel

__all__ = [
    "LSTMLanguageModel", "LSTMSeq2Seq", "LoadError", "MODEL_CLASSES_BY_NAME", "ModelOutput", "PretrainedModel", "UTEncoderClassifier",
    "FactEncoder", "UTLanguageModel", "UTStoryQA", "UniversalTransformer", "from_pretrained",
]
