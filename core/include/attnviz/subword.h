// SPDX-License-Identifier: GPL-3.0-or-later
// Subword tokenizers of real checkpoints, exact to the ids their reference encoders give:
//   - byte-level BPE (GPT-2's vocab.json + merges.txt): GPT-2's pre-tokenization pattern, the
//     byte <-> unicode table, merges by rank, decoding back to the exact bytes;
//   - Hugging Face's tokenizer.json with the BPE model, read generically (Qwen 2.5 / 3, Llama 3,
//     Mistral, Gemma 3 ...): added tokens, normalizers, pre-tokenizers (regexes on ICU), BPE with
//     byte fallback, the post-processor's BOS / EOS and the decoder;
//   - WordPiece (BERT's vocab.txt): Hugging Face's BasicTokenizer (clean-up, CJK split, NFC,
//     lower case, NFD accent stripping, punctuation split) and greedy longest-match "##" pieces.
// Unicode properties, case mapping and normalization come from ICU (linked privately).
// Text is UTF-8; bytes that are not valid UTF-8 are kept (BPE encodes them byte by byte; WordPiece
// drops them as Python drops U+FFFD).
#pragma once

#include "attnviz/model.h"
#include "attnviz/status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz {

class SubwordTokenizer { // Qt-free; const methods thread-safe
public:
    virtual ~SubwordTokenizer() = default;
    virtual std::string kind() const = 0; // "byte-level BPE", "WordPiece (lower case)"
    virtual int vocabSize() const = 0;
    // Text -> tokens with ids, byte ranges in `text`, `display` text (GPT-2's Ġ shown as a visible
    // space "␣", Ċ as "↵"), `special` for added specials; BERT adds [CLS] ... [SEP].
    virtual Status encode(std::string_view text, std::vector<TraceToken> &out) const = 0;
    // Ids -> text. BPE: the exact bytes (ids out of range are skipped). WordPiece: Hugging Face's
    // decode (pieces joined by spaces, " ##" removed, its clean-up of spaces before punctuation).
    virtual std::string decode(const std::vector<int> &ids) const = 0;
    virtual std::string token(int id) const = 0;      // as in the vocabulary; "" when out of range
    virtual int id(std::string_view token) const = 0; // -1 when absent
    // Whether `id` is an added token (tokenizer.json's added_tokens): such ids may lie beyond a
    // model's embedding rows (Gemma 3's <image_soft_token>), as no text in the vocabulary needs them.
    virtual bool isAdded(int /*id*/) const { return false; }
};

struct WordPieceOptions {
    bool lowerCase = true;    // do_lower_case
    bool stripAccents = true; // = lowerCase unless set (use fromConfig for tokenizer_config.json)
    bool chineseChars = true; // tokenize_chinese_chars: spaces around CJK ideographs
    int maxCharsPerWord = 100;
    bool addSpecials = true; // [CLS] ... [SEP]

    // The options Hugging Face derives from tokenizer_config.json: strip_accents absent (null)
    // means "as do_lower_case".
    static WordPieceOptions fromConfig(bool doLowerCase, std::optional<bool> stripAccents,
                                       bool tokenizeChineseChars = true)
    {
        WordPieceOptions o;
        o.lowerCase = doLowerCase;
        o.stripAccents = stripAccents.value_or(doLowerCase);
        o.chineseChars = tokenizeChineseChars;
        return o;
    }
};

// Largest files the loaders read (a real vocab.json is 1 MB, merges.txt 0.5 MB, vocab.txt 0.2 MB).
constexpr uint64_t kMaxTokenizerFileBytes = 64ull << 20;

// From files (read through attnviz/fileio.h: regular files only, at most kMaxTokenizerFileBytes)
// and from memory (fuzzing). Messages name the file ("PATH: line 7: ..."); from memory they name
// `name` ("NAME (merges.txt): line 7: ..."). `out` is set only on success.
Status loadByteLevelBpe(const std::string &vocabJson, const std::string &mergesTxt,
                        std::unique_ptr<SubwordTokenizer> &out);
Status parseByteLevelBpe(const std::string &vocabJsonBytes, const std::string &mergesBytes, const std::string &name,
                         std::unique_ptr<SubwordTokenizer> &out);
// DIR/tokenizer.json (+ DIR/tokenizer_config.json when present: its add_bos_token / add_eos_token
// override the post-processor's BOS / EOS, as transformers does). Messages name the file and the
// field ("DIR (tokenizer.json): model.merges[7]: \"x\" is not in the vocabulary"); from memory they
// name `name`. A regex that backtracks without end fails encode() with such a message, never hangs.
// decode() runs the file's decoder (specials included, as Hugging Face's decode without
// skip_special_tokens); ByteLevel decoding keeps the exact bytes. With embeddingRows >= 0 (the
// model's vocab_size), a vocabulary of more tokens is refused before anything is built.
Status loadHfTokenizer(const std::string &dir, std::unique_ptr<SubwordTokenizer> &out, int embeddingRows = -1);
Status parseHfTokenizer(const std::string &tokenizerJson, const std::string &tokenizerConfigJson /* may be empty */,
                        const std::string &name, std::unique_ptr<SubwordTokenizer> &out, int embeddingRows = -1);
// What opening DIR/tokenizer.json would refuse before building the tokenizer, as opening says it
// ("tokenizer.json: " then the reason): the file (not a regular file, larger than a tokenizer may be,
// truncated, malformed or nested too deep before model.type) or its model.type ("tokenizer.json:
// model.type: Unigram models are not supported yet (only BPE)"). A sound file is read only as far
// as model.type, and its last bytes, so that a list of local models says it before anything is
// opened. Empty where opening would get as far as building.
std::string hfTokenizerProblem(const std::string &dir);
Status loadWordPiece(const std::string &vocabTxt, const WordPieceOptions &options,
                     std::unique_ptr<SubwordTokenizer> &out);
Status parseWordPiece(const std::string &vocabBytes, const std::string &name, const WordPieceOptions &options,
                      std::unique_ptr<SubwordTokenizer> &out);
// A SentencePiece model file (T5's spiece.model) read and run by the SentencePiece library itself:
// the normalizer the file carries (NFKC, whitespace rules), its unigram or BPE pieces, byte fallback.
// encode() gives the library's pieces with their byte ranges, then, with `appendEos`, the model's end
// token (</s>) as a special, as T5Tokenizer appends it. Messages name the file.
Status loadSentencePiece(const std::string &modelFile, bool appendEos, std::unique_ptr<SubwordTokenizer> &out);
Status parseSentencePiece(const std::string &modelBytes, const std::string &name, bool appendEos,
                          std::unique_ptr<SubwordTokenizer> &out);
// Marian's tokenizer for one side (MarianTokenizer: source.spm for the source, target.spm for the
// target, one vocab.json): a ">>xx<<" language code at the front kept as a token, the rest encoded
// by the SentencePiece library to pieces, each piece's id read from vocab.json (<unk>'s where it is
// absent), then </s>. decode() leaves </s> and <pad> out. Messages name the files.
Status loadMarianTokenizer(const std::string &spmFile, const std::string &vocabJson, std::unique_ptr<SubwordTokenizer> &out);
// mBART's tokenizer (MBartTokenizer for mbart-large-cc25 and its fine-tunings, MBart50Tokenizer for
// mbart-large-50): sentencepiece.bpe.model run by the SentencePiece library, its pieces numbered as
// fairseq's dictionary: <s> 0, <pad> 1, </s> 2, <unk> 3, the model's piece i at i + 1 (its <unk>
// at 3), then the layout's language codes (mbartLanguages), then <mask>. encode() gives the text's
// pieces alone: the model adds </s> and the language's code where the layout puts them. decode()
// leaves the specials and codes out. Messages name the file.
enum class MBartLayout {
    CC25,  // 25 codes; a text is `X </s> code`
    Fifty, // 52 codes; a text is `code X </s>`
};
const std::vector<std::string> &mbartLanguages(MBartLayout layout);
Status loadMBartTokenizer(const std::string &modelFile, MBartLayout layout, std::unique_ptr<SubwordTokenizer> &out);

} // namespace attnviz
