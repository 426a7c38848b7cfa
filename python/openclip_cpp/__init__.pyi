from ._api import CLIP as CLIP, Tokenizer as Tokenizer, create_model_and_transforms as create_model_and_transforms
from ._api import get_tokenizer as get_tokenizer, list_models as list_models
from ._core import Model as Model, __version__ as __version__, create_model as create_model, tokenize as tokenize, train as train
