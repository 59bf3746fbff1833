"""Data: vocabularies, tokenization, batches, toy tasks and the Multi30k German→English pipeline
(notebooks 08 and 11; paper §5.1 "Training Data and Batching").

    text ──tokenize──▶ tokens ──Vocab.encode──▶ ids ──TokenBatchSampler + collate──▶ Batch
                                                                   (src, tgt_in, tgt_out, masks, n_tokens)

One topic per module, imported in this order (each one only from those above it):

    vocab      Vocab, the specials PAD/UNK/BOS/EOS = 0/1/2/3, VocabMismatchError
    corpus     read_lines, check_aligned, sha256_file: parallel text files on disk
    download   download_multi30k: mirror, official URL, total deadline, size limit, SHA-256
    tokenization  spaCy's blank tokenizers, the token cache on disk, detokenize and its spacing rules
    bpe        byte-pair encoding written out (learn merges, segment words), for teaching (§5.1)
    subword    SubwordTokenizer: one joint de+en BPE model through Hugging Face `tokenizers`
    batching   Batch (shifted target and masks), pad_sequences, collate, PairDataset, TokenBatchSampler
    toy        the copy and reverse tasks: toy_pairs, toy_batches, toy_dataset, toy_vocab
    multi30k   load_pairs, prepare_multi30k → Multi30k (download, tokenize, vocabularies, datasets)
    captions   the language model's corpus (notebook 12): one side's captions as one subword id stream, with
               add-k unigram and bigram baselines
    loaders    TrainingData, toy_data, multi30k_data (spaCy words or subwords, one or both directions),
               subword_tokenizer: what ``fit`` reads

Every name is re-exported here, so ``from transformer_course.data import Vocab, collate`` keeps working.
"""

from .batching import Batch, PairDataset, TokenBatchSampler, collate, pad_sequences, padding_fraction, word_dropout
from .bpe import BPE, WORD_START, count_pairs, is_punctuation, learn_bpe, merge_pair, pretokenize
from .captions import (
    Captions,
    best_k,
    bigram_perplexity,
    caption_stream,
    prepare_captions,
    unigram_perplexity,
)
from .corpus import check_aligned, read_lines, sha256_file
from .download import (
    LANGUAGES,
    MIRROR_ENV,
    MULTI30K_SHA256,
    MULTI30K_SIZES,
    MULTI30K_URL,
    SPLITS,
    ChecksumError,
    DownloadError,
    download_multi30k,
    multi30k_filename,
    multi30k_path,
)
from .loaders import (
    REVERSED_START,
    TrainingData,
    both_ways_batch,
    multi30k_data,
    prepare_multi30k_subwords,
    subword_tokenizer,
    toy_data,
)
from .multi30k import Multi30k, load_pairs, prepare_multi30k
from .subword import SUBWORD_FORMAT, SubwordTokenizer
from .tokenization import (
    NO_SPACE_AFTER,
    NO_SPACE_BEFORE,
    TOKENIZER_VERSION,
    detokenize,
    spacy_tokenizer,
    tokenize,
    tokenize_file,
    tokenize_many,
)
from .toy import TOY_TASKS, toy_batches, toy_dataset, toy_pairs, toy_vocab
from .vocab import BOS, EOS, PAD, SPECIALS, UNK, Vocab, VocabMismatchError

__all__ = [
    "Captions",
    "best_k",
    "bigram_perplexity",
    "caption_stream",
    "prepare_captions",
    "unigram_perplexity",
    "BPE",
    "WORD_START",
    "count_pairs",
    "is_punctuation",
    "learn_bpe",
    "merge_pair",
    "pretokenize",
    "SUBWORD_FORMAT",
    "SubwordTokenizer",
    "BOS",
    "EOS",
    "LANGUAGES",
    "MIRROR_ENV",
    "MULTI30K_SHA256",
    "MULTI30K_SIZES",
    "MULTI30K_URL",
    "NO_SPACE_AFTER",
    "NO_SPACE_BEFORE",
    "PAD",
    "SPECIALS",
    "SPLITS",
    "TOKENIZER_VERSION",
    "TOY_TASKS",
    "UNK",
    "Batch",
    "ChecksumError",
    "DownloadError",
    "Multi30k",
    "PairDataset",
    "TokenBatchSampler",
    "word_dropout",
    "REVERSED_START",
    "TrainingData",
    "both_ways_batch",
    "prepare_multi30k_subwords",
    "subword_tokenizer",
    "Vocab",
    "VocabMismatchError",
    "check_aligned",
    "collate",
    "detokenize",
    "download_multi30k",
    "load_pairs",
    "multi30k_data",
    "multi30k_filename",
    "multi30k_path",
    "pad_sequences",
    "padding_fraction",
    "prepare_multi30k",
    "read_lines",
    "sha256_file",
    "spacy_tokenizer",
    "tokenize",
    "tokenize_file",
    "tokenize_many",
    "toy_batches",
    "toy_data",
    "toy_dataset",
    "toy_pairs",
    "toy_vocab",
]
