// SPDX-License-Identifier: GPL-3.0-or-later
// An encoder-decoder model folder (seq2seqmodel.h): config.json's architecture, the weights of both
// stacks (forward/seq2seq.h), teacher-forced traces that keep the encoder's, the decoder's and the
// cross attentions (Trace::seq2seq), float32 and float64, greedy decoding through traces, and
// generation with the folder's settings, greedy or beam search (encoderdecoder.h); and a T5
// encoder alone (llama.cpp's t5encoder GGUF files) as an encoder-only model.
#include "seq2seqmodel.h"
#include "attnviz/encoderdecoder.h"
#include "attnviz/bench.h"
#include "attnviz/fileio.h"
#include "attnviz/subword.h"
#include "families/family.h"
#include "forward/seq2seq.h"
#include "../formats/jsonread.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <cmath>
#include <mutex>

namespace attnviz {

namespace seq2seqmodel {

std::string baseName(const std::string &dir)
{
    std::string d = dir;
    while (d.size() > 1 && d.back() == '/')
        d.pop_back();
    const size_t slash = d.rfind('/');
    return slash == std::string::npos ? d : d.substr(slash + 1);
}

// A model's float64 weights, cast from its float32 ones on first use (the float64 traces,
// generation and reads the reference checks ask for), from any thread.
class Float64Weights {
public:
    std::shared_ptr<const Seq2SeqWeights<double>> of(const Seq2SeqWeights<float> &w) const
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (!m_weights)
            m_weights = castSeq2SeqWeights<double>(w);
        return m_weights;
    }

private:
    mutable std::mutex m_mutex;
    mutable std::shared_ptr<const Seq2SeqWeights<double>> m_weights;
};

class EncoderDecoderModel final : public Model {
public:
    EncoderDecoderModel(Architecture arch, std::string dir, std::shared_ptr<const Seq2SeqWeights<float>> w,
                        std::string dtype, std::unique_ptr<SubwordTokenizer> tokenizer,
                        std::unique_ptr<SubwordTokenizer> targetTokenizer, std::string noTokenizer,
                        Seq2SeqGenerationSettings settings)
        : m_arch(std::move(arch)), m_dir(std::move(dir)), m_float(std::move(w)), m_dtype(std::move(dtype)),
          m_tokenizer(std::move(tokenizer)), m_targetTokenizer(std::move(targetTokenizer)),
          m_noTokenizer(std::move(noTokenizer)), m_settings(std::move(settings))
    {
    }

    const Seq2SeqGenerationSettings &settings() const { return m_settings; }

    // An mBART folder with its tokenizer: the layout and the languages first chosen.
    void setMBart(MBartLayout layout, const std::string &source, const std::string &target)
    {
        m_mbart = true;
        m_layout = layout;
        m_languages = {source, target};
    }

    Status languages(Seq2SeqLanguages &out) const
    {
        out = Seq2SeqLanguages();
        if (!m_mbart)
            return {};
        out.codes = mbartLanguages(m_layout);
        std::lock_guard<std::mutex> lock(m_languageMutex);
        out.source = m_languages.first;
        out.target = m_languages.second;
        return {};
    }

    Status setLanguages(const std::string &source, const std::string &target)
    {
        if (!m_mbart)
            return Status::error(StatusCode::InvalidInput, baseName(m_dir) + " (" + m_arch.family + ") reads no language codes: " +
                                                               "only mBART folders with sentencepiece.bpe.model do");
        const std::vector<std::string> &codes = mbartLanguages(m_layout);
        for (const std::string *code : {&source, &target})
            if (std::find(codes.begin(), codes.end(), *code) == codes.end())
                return Status::error(StatusCode::InvalidInput, "language " + *code + ": " + baseName(m_dir) + " knows " +
                                                                   std::to_string(codes.size()) + " codes: " + joinCodes(codes));
        std::lock_guard<std::mutex> lock(m_languageMutex);
        m_languages = {source, target};
        return {};
    }

    // The median of `repeat` decoder steps at position target.size() (its keys and values of the
    // start token and the target before its last token kept, untimed), float32.
    Status timeStep(const std::vector<int> &source, const std::vector<int> &target, int repeat, double &ms)
    {
        Seq2SeqSteps<float> primed;
        if (Status st = startSeq2SeqSteps(m_arch, *m_float, source, primed); !st)
            return st;
        std::vector<double> logProbs, runs;
        Mat<double> cross;
        std::vector<int> fed{m_arch.seq2seq.decoderStartId};
        fed.insert(fed.end(), target.begin(), target.end());
        for (size_t i = 0; i + 1 < fed.size(); ++i)
            if (Status st = stepSeq2Seq(m_arch, *m_float, primed, fed[i], logProbs, &cross); !st)
                return st;
        for (int r = 0; r < std::max(1, repeat); ++r) {
            Seq2SeqSteps<float> steps = primed;
            const auto t0 = std::chrono::steady_clock::now();
            if (Status st = stepSeq2Seq(m_arch, *m_float, steps, fed.back(), logProbs, &cross); !st)
                return st;
            runs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(runs.begin(), runs.end());
        ms = runs[runs.size() / 2];
        return {};
    }

    Status generate(const TraceRequest &request, const Seq2SeqGenerateOptions &options, Seq2SeqGeneration &out)
    {
        if (!request.edits.empty())
            return Status::error(StatusCode::Unavailable, "interventions in encoder-decoder models (" + m_arch.family +
                                                              ") are not computed yet");
        std::vector<TraceToken> source;
        if (!request.ids.empty()) {
            source = tokensOf(request.ids);
        } else if (Status st = tokenize(request.text, source); !st) {
            return st;
        }
        if (request.maxTokens > 0 && int(source.size()) > request.maxTokens)
            source.resize(size_t(request.maxTokens));
        out = Seq2SeqGeneration();
        out.source = source;
        Status st;
        const Start start = startFor(languages().second);
        if (!options.float64) {
            st = generateWith(*m_float, options, start, out);
        } else {
            st = generateWith(*m_double.of(*m_float), options, start, out);
        }
        if (!st)
            return st;
        out.tokens = tokensOf(out.ids);
        std::vector<int> text = out.ids;
        if (!text.empty() && text.back() == m_arch.seq2seq.eosId)
            text.pop_back();
        out.text = decode(text);
        return {};
    }

    ModelInfo info() const override
    {
        ModelInfo i;
        i.family = m_arch.family;
        i.name = baseName(m_dir);
        i.source = m_dir;
        i.layers = m_arch.layers;
        i.heads = m_arch.heads;
        i.kvHeads = m_arch.kvHeads;
        i.dModel = m_arch.dModel;
        i.dHead = m_arch.dHead;
        i.dFeedForward = m_arch.dFeedForward;
        i.vocabulary = m_arch.vocabulary;
        i.maxPositions = m_arch.positions == PositionKind::RelativeBuckets ? 0 : m_arch.maxPositions; // T5: no table
        i.parameters = m_float->parameters;
        i.tokenizer = m_tokenizer ? m_tokenizer->kind() + " (" + std::to_string(m_tokenizer->vocabSize()) + ")" : "none (ids only)";
        i.dtype = m_dtype;
        i.weightBytes = m_float->parameters * int64_t(sizeof(float));
        i.causal = true;
        i.architecture = m_arch;
        return i;
    }

    // The source as T5Tokenizer encodes it (SentencePiece's pieces, then </s>), MarianTokenizer
    // (source.spm's pieces looked up in vocab.json, then </s>), BartTokenizer (<s>, the byte-level
    // BPE tokens, </s>) or MBartTokenizer (the pieces, </s>, the source language's code;
    // MBart50Tokenizer: the code, the pieces, </s>).
    Status tokenize(std::string_view text, std::vector<TraceToken> &out) const override
    {
        out.clear();
        if (!m_tokenizer)
            return Status::error(StatusCode::Unavailable, m_noTokenizer);
        if (m_mbart)
            return encodeMBart(text, languages().first, out);
        if (!m_bpe)
            return m_tokenizer->encode(text, out);
        if (m_arch.seq2seq.bosId >= 0)
            out.push_back(tokensOf({m_arch.seq2seq.bosId}).front());
        std::vector<TraceToken> pieces;
        if (Status st = m_tokenizer->encode(text, pieces); !st)
            return st;
        out.insert(out.end(), pieces.begin(), pieces.end());
        out.push_back(tokensOf({m_arch.seq2seq.eosId}).front());
        return {};
    }

    // Ids of the target (the decoder's tokens, what generate() writes) as text.
    std::string decode(const std::vector<int> &ids) const override
    {
        const SubwordTokenizer *t = m_targetTokenizer ? m_targetTokenizer.get() : m_tokenizer.get();
        return t ? t->decode(ids) : std::string();
    }

    Status trace(const TraceRequest &request, Trace<float> &out) override { return run(request, *m_float, out); }

    Status trace(const TraceRequest &request, Trace<double> &out) override
    {
        return run(request, *m_double.of(*m_float), out);
    }

    // The weights and spellings the decoder's lens and attribution read.
    void fillReadout(bool float64, detail::Seq2SeqReadout &out) const
    {
        out.arch = m_arch;
        out.name = baseName(m_dir).empty() ? m_arch.family : baseName(m_dir);
        out.floatWeights = m_float;
        if (float64)
            out.doubleWeights = m_double.of(*m_float);
        out.token = [this](int id) {
            const TraceToken t = tokensOf({id}).front();
            TokenProb p;
            p.id = id;
            p.token = m_tokenizer ? m_tokenizer->token(id) : std::to_string(id);
            p.display = t.display;
            return p;
        };
    }

private:
    // The decoder's start token and the token forced after it (-1: the folder's settings).
    struct Start {
        int id = -1;
        int forcedBos = -1;
    };

    template <typename T>
    Status generateWith(const Seq2SeqWeights<T> &w, const Seq2SeqGenerateOptions &options, const Start &start,
                        Seq2SeqGeneration &out);

    static std::string joinCodes(const std::vector<std::string> &codes)
    {
        std::string s;
        for (const std::string &c : codes)
            s += (s.empty() ? "" : ", ") + c;
        return s;
    }

    std::pair<std::string, std::string> languages() const
    {
        std::lock_guard<std::mutex> lock(m_languageMutex);
        return m_languages;
    }

    bool isLanguageCode(int id) const
    {
        if (!m_mbart)
            return false;
        const std::string t = m_tokenizer->token(id);
        const std::vector<std::string> &codes = mbartLanguages(m_layout);
        return std::find(codes.begin(), codes.end(), t) != codes.end();
    }

    // For the target language: mBART-cc25's decoder starts at the language's code (MBart's
    // shift_tokens_right turns labels `X </s> code` into `code X </s>`, and generate() is given
    // decoder_start_token_id = lang_code_to_id[tgt_lang] as the model card does); mBART-50's starts
    // at the folder's decoder_start_token_id (</s>) and its first token is the code (labels
    // `code X </s>` shifted; forced_bos_token_id = the code, as the translation pipeline sets it).
    // Other models: the folder's start.
    Start startFor(const std::string &target) const
    {
        Start s;
        s.id = m_arch.seq2seq.decoderStartId;
        if (!m_mbart)
            return s;
        const int code = m_tokenizer->id(target);
        if (m_layout == MBartLayout::CC25)
            s.id = code;
        else
            s.forcedBos = code;
        return s;
    }

    Status encodeMBart(std::string_view text, const std::string &language, std::vector<TraceToken> &out) const
    {
        std::vector<TraceToken> pieces;
        if (Status st = m_tokenizer->encode(text, pieces); !st)
            return st;
        TraceToken code = tokensOf({m_tokenizer->id(language)}).front(), eos = tokensOf({m_arch.seq2seq.eosId}).front();
        code.begin = code.end = eos.begin = eos.end = text.size();
        if (m_layout == MBartLayout::Fifty) {
            code.begin = code.end = 0;
            out.push_back(code);
        }
        out.insert(out.end(), pieces.begin(), pieces.end());
        out.push_back(eos);
        if (m_layout == MBartLayout::CC25)
            out.push_back(code);
        return {};
    }

    // Tokens of bare ids: their pieces where the folder has a tokenizer, else the ids written out.
    std::vector<TraceToken> tokensOf(const std::vector<int> &ids) const
    {
        std::vector<TraceToken> t(ids.size());
        for (size_t i = 0; i < ids.size(); ++i) {
            t[i].id = ids[i];
            const std::string piece = m_tokenizer ? m_tokenizer->token(ids[i]) : std::string();
            t[i].text = piece.empty() ? std::to_string(ids[i]) : piece;
            const bool special = ids[i] == m_arch.seq2seq.eosId || ids[i] == m_arch.seq2seq.padId ||
                                 ids[i] == m_arch.seq2seq.bosId || isLanguageCode(ids[i]);
            // a byte-level BPE token as its bytes (Ġ is a space), a SentencePiece piece as written
            t[i].display = m_bpe && !special && !piece.empty() ? m_tokenizer->decode({ids[i]}) : t[i].text;
            for (const char *space : {"\xE2\x96\x81", " "}) // SentencePiece's and BPE's space made visible
                for (size_t k = t[i].display.find(space); m_tokenizer && k != std::string::npos;
                     k = t[i].display.find(space, k))
                    t[i].display.replace(k, std::string_view(space).size(), "\xE2\x90\xA3");
            t[i].special = special;
        }
        return t;
    }

    template <typename T>
    Status run(const TraceRequest &request, const Seq2SeqWeights<T> &w, Trace<T> &out)
    {
        if (!request.edits.empty())
            return Status::error(StatusCode::Unavailable, "interventions in encoder-decoder models (" + m_arch.family +
                                                              ") are not computed yet");
        Seq2SeqInput in;
        std::vector<TraceToken> source, target;
        if (!request.ids.empty()) {
            source = tokensOf(request.ids);
        } else if (Status st = tokenize(request.text, source); !st) {
            return st;
        }
        const std::string targetLanguage = languages().second;
        const Start start = startFor(targetLanguage);
        target.push_back(tokensOf({start.id}).front());
        target.front().special = true; // the decoder's start token
        if (!request.targetIds.empty()) {
            for (const TraceToken &t : tokensOf(request.targetIds))
                target.push_back(t);
        } else if (!request.target.empty()) {
            std::vector<TraceToken> typed;
            Status st = m_targetTokenizer ? m_targetTokenizer->encode(request.target, typed)
                        : m_mbart         ? encodeMBart(request.target, targetLanguage, typed)
                                          : tokenize(request.target, typed);
            if (!st)
                return st;
            // the decoder is fed the target without the </s> a source gets; BART's <s> stays, as
            // shift_tokens_right of its labels keeps it after the start token, and so does
            // mBART-50's language code
            for (const TraceToken &t : typed)
                if (!t.special || (&t == &typed.front() && (t.id == m_arch.seq2seq.bosId || (m_mbart && m_layout == MBartLayout::Fifty))))
                    target.push_back(t);
        }
        Trace<T> r;
        r.totalKeyTokens = 0;
        r.totalTokens = int(target.size());
        if (request.maxTokens > 0) {
            if (int(source.size()) > request.maxTokens || int(target.size()) > request.maxTokens)
                r.cutReason = "cut at " + std::to_string(request.maxTokens) + " tokens (source and target each)";
            source.resize(std::min(source.size(), size_t(request.maxTokens)));
            target.resize(std::min(target.size(), size_t(request.maxTokens)));
        }
        for (const TraceToken &t : source)
            in.source.push_back(t.id);
        for (const TraceToken &t : target)
            in.decoder.push_back(t.id);
        in.topK = request.topK;
        in.allPredictions = request.allPredictions;
        in.keepScores = request.keepScores;
        in.cancel = request.cancel;
        if (Status st = runSeq2Seq(m_arch, w, in, r); !st)
            return st;
        r.seq2seq.sourceTokens = std::move(source);
        r.tokens = std::move(target);
        for (std::vector<TokenProb> &top : r.predictions.next)
            for (TokenProb &p : top) {
                p.token = m_tokenizer ? m_tokenizer->token(p.id) : std::to_string(p.id);
                p.display = tokensOf({p.id}).front().display;
            }
        r.device = "cpu";
        if (request.device)
            r.deviceNote = "encoder-decoder models do not run on a device yet: the CPU computed";
        out = std::move(r);
        return {};
    }

    Architecture m_arch;
    std::string m_dir;
    std::shared_ptr<const Seq2SeqWeights<float>> m_float;
    seq2seqmodel::Float64Weights m_double;
    std::string m_dtype;
    std::unique_ptr<SubwordTokenizer> m_tokenizer;
    std::unique_ptr<SubwordTokenizer> m_targetTokenizer; // the target's where it is another (Marian's target.spm)
    std::string m_noTokenizer; // why there is none
    Seq2SeqGenerationSettings m_settings;
    bool m_bpe = m_tokenizer && m_tokenizer->kind().find("BPE") != std::string::npos &&
                 m_tokenizer->kind().find("mBART") == std::string::npos; // byte-level BPE
    bool m_mbart = false; // an mBART folder with its tokenizer: languages chosen
    MBartLayout m_layout = MBartLayout::CC25;
    mutable std::mutex m_languageMutex;
    std::pair<std::string, std::string> m_languages; // source, target
};


// transformers' logits processors on one hypothesis's log-probs, as generate() builds them for these
// settings: NoRepeatNGram, NoBadWords, MinLength, ForcedBOS, ForcedEOS (a forced token's score is
// 0, every other -inf). `ids` holds the start token and the target so far.
void processScores(const Seq2SeqGenerationSettings &g, int eos, const std::vector<int> &ids, std::vector<double> &scores)
{
    const double ninf = -std::numeric_limits<double>::infinity();
    const int V = int(scores.size()), cur = int(ids.size()), n = g.noRepeatNgramSize;
    if (n > 0 && cur + 1 >= n) // a token that would repeat an n-gram of the hypothesis
        for (int i = 0; i + n <= cur; ++i)
            if (std::equal(ids.begin() + i, ids.begin() + i + n - 1, ids.end() - (n - 1)) && ids[size_t(i + n - 1)] < V)
                scores[size_t(ids[size_t(i + n - 1)])] = ninf;
    for (const std::vector<int> &bad : g.badWordsIds) {
        if (bad.empty() || bad.back() < 0 || bad.back() >= V)
            continue;
        const size_t prefix = bad.size() - 1;
        if (prefix <= ids.size() && std::equal(bad.begin(), bad.end() - 1, ids.end() - long(prefix)))
            scores[size_t(bad.back())] = ninf;
    }
    if (cur < g.minLength && eos >= 0 && eos < V)
        scores[size_t(eos)] = ninf;
    auto force = [&](int id) {
        if (id < 0 || id >= V)
            return;
        std::fill(scores.begin(), scores.end(), ninf);
        scores[size_t(id)] = 0;
    };
    if (cur == 1 && g.forcedBosId >= 0)
        force(g.forcedBosId);
    if (cur == g.maxLength - 1 && g.forcedEosId >= 0)
        force(g.forcedEosId);
}

template <typename T>
Status EncoderDecoderModel::generateWith(const Seq2SeqWeights<T> &w, const Seq2SeqGenerateOptions &options,
                                         const Start &startToken, Seq2SeqGeneration &out)
{
    Seq2SeqGenerationSettings g = m_settings;
    if (startToken.forcedBos >= 0)
        g.forcedBosId = startToken.forcedBos;
    if (options.beams != 0)
        g.numBeams = options.beams;
    if (g.numBeams < 1 || g.numBeams > 4)
        return Status::error(StatusCode::InvalidInput, "beam search of " + std::to_string(g.numBeams) +
                                                           " beams: 1 (greedy) to 4 are computed");
    if (options.maxNew >= 0)
        g.maxLength = options.maxNew + 1;
    if (!std::isnan(options.lengthPenalty))
        g.lengthPenalty = options.lengthPenalty;
    if (options.earlyStopping >= 0)
        g.earlyStopping = options.earlyStopping;
    if (options.noRepeatNgramSize >= 0)
        g.noRepeatNgramSize = options.noRepeatNgramSize;
    out.settings = g;
    if (g.maxLength <= 1) // nothing to generate past the start token
        return {};
    std::vector<int> source;
    for (const TraceToken &t : out.source)
        source.push_back(t.id);
    // the encoder and the cross-attention keys and values once; each step the decoder at one position
    Seq2SeqSteps<T> first;
    if (Status st = startSeq2SeqSteps(m_arch, w, source, first); !st)
        return st;
    const int eos = m_arch.seq2seq.eosId, start = startToken.id;
    std::vector<double> scores;
    Mat<double> cross;
    if (g.numBeams == 1) { // greedy search
        std::vector<int> ids{start};
        while (int(ids.size()) < g.maxLength) {
            if (Status st = stepSeq2Seq(m_arch, w, first, ids.back(), scores, &cross); !st)
                return st;
            processScores(g, eos, ids, scores);
            const int next = int(std::max_element(scores.begin(), scores.end()) - scores.begin());
            out.logProb += scores[size_t(next)];
            ids.push_back(next);
            out.cross.push_back(cross);
            if (next == eos)
                break;
        }
        out.ids.assign(ids.begin() + 1, ids.end());
        out.score = out.logProb;
        return {};
    }
    // beam search: BeamSearchScorer's process() and finalize() for one source
    struct Beam {
        std::vector<int> ids; // the start token, the target so far
        double score = 0;     // the sum of its log-probs
        std::vector<Mat<double>> cross;
        Seq2SeqSteps<T> steps; // its decoder's keys and values up to the token before its last
    };
    struct Hypothesis {
        double score;
        double logProb;
        std::vector<int> ids;
        std::vector<Mat<double>> cross;
        bool ended; // closed by the end token
    };
    const int nb = g.numBeams;
    std::vector<Beam> beams(static_cast<size_t>(nb));
    for (int b = 0; b < nb; ++b) {
        beams[size_t(b)].ids = {start};
        beams[size_t(b)].score = b == 0 ? 0.0 : -1e9; // the first step expands the first beam only
        beams[size_t(b)].steps = first;
    }
    std::vector<Hypothesis> hyps;
    double worst = 1e9;
    auto add = [&](std::vector<int> ids, double logProb, std::vector<Mat<double>> rows, int length, bool ended) {
        const double score = logProb / std::pow(double(length), g.lengthPenalty);
        if (int(hyps.size()) < nb || score > worst) {
            hyps.push_back({score, logProb, std::move(ids), std::move(rows), ended});
            if (int(hyps.size()) > nb) {
                std::vector<std::pair<double, size_t>> sorted;
                for (size_t i = 0; i < hyps.size(); ++i)
                    sorted.emplace_back(hyps[i].score, i);
                std::sort(sorted.begin(), sorted.end());
                hyps.erase(hyps.begin() + long(sorted[0].second));
                worst = sorted[1].first;
            } else {
                worst = std::min(score, worst);
            }
        }
    };
    bool done = false;
    const int V = m_arch.vocabulary;
    while (true) {
        const int curLen = int(beams.front().ids.size());
        struct Candidate {
            double score;
            int beam, token;
        };
        std::vector<Candidate> all;
        all.reserve(size_t(nb) * size_t(V));
        std::vector<Mat<double>> rows(static_cast<size_t>(nb));
        for (int b = 0; b < nb; ++b) {
            Beam &bm = beams[size_t(b)];
            if (Status st = stepSeq2Seq(m_arch, w, bm.steps, bm.ids.back(), scores, &rows[size_t(b)]); !st)
                return st;
            processScores(g, eos, beams[size_t(b)].ids, scores);
            for (int v = 0; v < V; ++v)
                all.push_back({scores[size_t(v)] + beams[size_t(b)].score, b, v});
        }
        // torch.topk over (beams × vocabulary), sorted; equal scores in flat order
        const size_t k = std::min(all.size(), size_t(2 * nb));
        std::partial_sort(all.begin(), all.begin() + long(k), all.end(), [&](const Candidate &p, const Candidate &q) {
            return p.score > q.score || (p.score == q.score && (p.beam * V + p.token) < (q.beam * V + q.token));
        });
        std::vector<Beam> next;
        for (size_t rank = 0; rank < k && int(next.size()) < nb; ++rank) {
            const Candidate &c = all[rank];
            const Beam &from = beams[size_t(c.beam)];
            std::vector<Mat<double>> hist = from.cross;
            hist.push_back(rows[size_t(c.beam)]);
            if (c.token == eos) {
                if (int(rank) >= nb)
                    continue;
                // the hypothesis without its end token; its length counts the end token
                add(from.ids, c.score, std::move(hist), curLen, true);
            } else {
                Beam nbm;
                nbm.ids = from.ids;
                nbm.ids.push_back(c.token);
                nbm.score = c.score;
                nbm.cross = std::move(hist);
                nbm.steps = from.steps;
                next.push_back(std::move(nbm));
            }
        }
        if (int(next.size()) < nb) // fewer candidates than beams (a vocabulary smaller than 2 × beams)
            return Status::error(StatusCode::InvalidInput, "beam search of " + std::to_string(nb) + " beams over a vocabulary of " +
                                                               std::to_string(V) + ": too few candidates");
        // is_done(best candidate's score, the length after this step)
        if (!done && int(hyps.size()) >= nb) {
            const double best = all.front().score;
            if (g.earlyStopping == 1) {
                done = true;
            } else {
                const int len = g.earlyStopping == 2 && g.lengthPenalty > 0 ? g.maxLength - 1 : curLen;
                done = worst >= best / std::pow(double(len), g.lengthPenalty);
            }
        }
        beams = std::move(next);
        if (done || int(beams.front().ids.size()) >= g.maxLength)
            break;
    }
    if (!done) // finalize: the open beams join the hypotheses
        for (Beam &b : beams)
            add(b.ids, b.score, b.cross, int(b.ids.size()) - 1, false);
    // the best: the highest score, the last added among equal ones (Python's sorted(...).pop())
    size_t best = 0;
    for (size_t i = 1; i < hyps.size(); ++i)
        if (hyps[i].score >= hyps[best].score)
            best = i;
    Hypothesis &h = hyps[best];
    out.ids.assign(h.ids.begin() + 1, h.ids.end());
    if (h.ended)
        out.ids.push_back(eos);
    out.logProb = h.logProb;
    out.score = h.score;
    out.cross = std::move(h.cross);
    return {};
}

// mBART's tokenizer of folder `dir`: its layout from tokenizer_config.json's tokenizer_class
// (MBart50Tokenizer[Fast]: mBART-50's; MBartTokenizer[Fast]: mbart-large-cc25's), else from the
// embeddings' rows (the pieces + 1 + 52 codes + <mask>: mBART-50's; else cc25's); refused where
// its ids pass the embeddings' rows.
Status loadMBart(const std::string &dir, const std::string &bpe, const Architecture &arch,
                 std::unique_ptr<SubwordTokenizer> &out, MBartLayout &layout)
{
    layout = MBartLayout::CC25;
    bool named = false;
    uint64_t size = 0;
    if (const std::string config = dir + "/tokenizer_config.json"; regularFileSize(config, size)) {
        nlohmann::json j;
        if (Status st = detail::readJsonFile(config, 1u << 20, j); !st)
            return st;
        const auto it = j.is_object() ? j.find("tokenizer_class") : j.end();
        if (it != j.end() && it->is_string()) {
            const std::string cls = it->get<std::string>();
            named = cls.rfind("MBart", 0) == 0;
            if (cls.rfind("MBart50", 0) == 0)
                layout = MBartLayout::Fifty;
        }
    }
    if (Status st = loadMBartTokenizer(bpe, layout, out); !st)
        return st;
    const int pieces = out->vocabSize() - int(mbartLanguages(layout).size()) - 2;
    if (!named && arch.vocabulary == pieces + 1 + int(mbartLanguages(MBartLayout::Fifty).size()) + 1) {
        layout = MBartLayout::Fifty;
        if (Status st = loadMBartTokenizer(bpe, layout, out); !st)
            return st;
    }
    if (out->vocabSize() > arch.vocabulary)
        return Status::error(StatusCode::InvalidInput,
                             bpe + ": " + std::to_string(pieces) + " pieces and " + std::to_string(mbartLanguages(layout).size()) +
                                 " language codes make ids up to " + std::to_string(out->vocabSize() - 1) +
                                 ", but the embeddings have " + std::to_string(arch.vocabulary) + " rows (" + dir +
                                 "/config.json: vocab_size)");
    return {};
}

// config.json's or generation_config.json's generation fields over transformers' defaults.
Status readGenerationSettings(const nlohmann::json &j, const std::string &path, Seq2SeqGenerationSettings &g)
{
    auto intField = [&](const char *key, int &v) -> Status {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null())
            return {};
        if (!it->is_number_integer())
            return Status::error(StatusCode::InvalidInput, path + ": " + key + ": not a whole number");
        v = it->get<int>();
        return {};
    };
    for (auto [key, v] : {std::pair{"num_beams", &g.numBeams}, {"max_length", &g.maxLength}, {"min_length", &g.minLength},
                          {"no_repeat_ngram_size", &g.noRepeatNgramSize}, {"forced_bos_token_id", &g.forcedBosId},
                          {"forced_eos_token_id", &g.forcedEosId}})
        if (Status st = intField(key, *v); !st)
            return st;
    if (const auto it = j.find("length_penalty"); it != j.end() && !it->is_null()) {
        if (!it->is_number())
            return Status::error(StatusCode::InvalidInput, path + ": length_penalty: not a number");
        g.lengthPenalty = it->get<double>();
    }
    if (const auto it = j.find("early_stopping"); it != j.end() && !it->is_null()) {
        if (it->is_boolean())
            g.earlyStopping = it->get<bool>() ? 1 : 0;
        else if (it->is_string() && it->get<std::string>() == "never")
            g.earlyStopping = 2;
        else
            return Status::error(StatusCode::InvalidInput, path + ": early_stopping: true, false or \"never\"");
    }
    if (const auto it = j.find("bad_words_ids"); it != j.end() && !it->is_null()) {
        g.badWordsIds.clear();
        bool ok = it->is_array();
        for (size_t i = 0; ok && i < it->size(); ++i) {
            const nlohmann::json &seq = (*it)[i];
            ok = seq.is_array();
            std::vector<int> ids;
            for (size_t k = 0; ok && k < seq.size(); ++k) {
                ok = seq[k].is_number_integer();
                if (ok)
                    ids.push_back(seq[k].get<int>());
            }
            g.badWordsIds.push_back(std::move(ids));
        }
        if (!ok)
            return Status::error(StatusCode::InvalidInput, path + ": bad_words_ids: lists of token ids");
    }
    return {};
}

} // namespace seq2seqmodel

using seq2seqmodel::EncoderDecoderModel;

Status detail::openEncoderDecoder(const std::string &dir, const Architecture &arch, const PretrainedLoadOptions &options,
                                  std::unique_ptr<Model> &out)
{
    const families::Family *family = families::familyNamed(arch.family);
    if (!family)
        return Status::error(StatusCode::InvalidInput, dir + ": no family named " + arch.family);
    // the tokenizer: spiece.model (T5Tokenizer's file) or vocab.json + merges.txt (BartTokenizer's)
    // where the folder has them
    std::unique_ptr<SubwordTokenizer> tokenizer, targetTokenizer; // the target's: Marian's target.spm
    std::string noTokenizer;
    bool mbart = false; // mBART's tokenizer, of this layout
    MBartLayout layout = MBartLayout::CC25;
    const std::string spiece = dir + "/spiece.model";
    uint64_t size = 0;
    if (arch.family == "bart") {
        const std::string vocab = dir + "/vocab.json", merges = dir + "/merges.txt";
        if (regularFileSize(vocab, size) && regularFileSize(merges, size)) {
            if (Status lt = loadByteLevelBpe(vocab, merges, tokenizer); !lt)
                return lt;
            if (tokenizer->vocabSize() > arch.vocabulary)
                return Status::error(StatusCode::InvalidInput, vocab + ": " + std::to_string(tokenizer->vocabSize()) +
                                                                   " tokens, but the embeddings have " +
                                                                   std::to_string(arch.vocabulary) + " rows (" + dir +
                                                                   "/config.json: vocab_size)");
        } else {
            noTokenizer = dir + "/vocab.json and merges.txt: missing (BART's tokenizer): only token ids trace";
        }
    } else if (arch.family == "marian") {
        const std::string source = dir + "/source.spm", target = dir + "/target.spm", vocab = dir + "/vocab.json";
        if (regularFileSize(source, size) && regularFileSize(target, size) && regularFileSize(vocab, size)) {
            if (Status lt = loadMarianTokenizer(source, vocab, tokenizer); !lt)
                return lt;
            if (Status lt = loadMarianTokenizer(target, vocab, targetTokenizer); !lt)
                return lt;
            if (tokenizer->vocabSize() > arch.vocabulary)
                return Status::error(StatusCode::InvalidInput, vocab + ": ids up to " + std::to_string(tokenizer->vocabSize() - 1) +
                                                                   ", but the embeddings have " + std::to_string(arch.vocabulary) +
                                                                   " rows (" + dir + "/config.json: vocab_size)");
        } else {
            noTokenizer = dir + "/source.spm, target.spm and vocab.json: missing (Marian's tokenizer): only token ids trace";
        }
    } else if (arch.family == "mbart") {
        const std::string bpe = dir + "/sentencepiece.bpe.model";
        if (Status st = regularFileSize(bpe, size); st) {
            if (Status lt = seq2seqmodel::loadMBart(dir, bpe, arch, tokenizer, layout); !lt)
                return lt;
            mbart = true;
        } else if (st.message.find(": no such file") == std::string::npos) {
            return st; // there, but not a regular file
        } else {
            noTokenizer = bpe + ": missing (mBART's tokenizer): only token ids trace";
        }
    } else if (arch.family != "t5") {
        noTokenizer = dir + ": " + arch.family + "'s tokenizer is not read yet: only token ids trace";
    } else if (Status st = regularFileSize(spiece, size); st) {
        if (Status lt = loadSentencePiece(spiece, true, tokenizer); !lt)
            return lt;
        if (tokenizer->vocabSize() > arch.vocabulary)
            return Status::error(StatusCode::InvalidInput, spiece + ": " + std::to_string(tokenizer->vocabSize()) +
                                                               " pieces, but the embeddings have " + std::to_string(arch.vocabulary) +
                                                               " rows (" + dir + "/config.json: vocab_size)");
    } else if (st.message.find(": no such file") == std::string::npos) {
        return st; // there, but not a regular file
    } else {
        noTokenizer = spiece + ": missing (the folder's tokenizer): only token ids trace";
    }
    TensorArchive archive;
    if (Status st = archive.openFolder(dir); !st)
        return st;
    archive.setProgress(options.progress);
    auto w = std::make_shared<Seq2SeqWeights<float>>();
    try {
        if (Status st = loadSeq2SeqWeights(archive, arch, family->names(arch), *w); !st)
            return st;
    } catch (const std::bad_alloc &) {
        return Status::error(StatusCode::BackendFailed, archive.fileOf(std::string()) + ": out of memory converting " +
                                                            describeBytes(archive.totalBytes()) + " of weights to float32");
    }
    // generate()'s settings: generation_config.json where the folder has one (transformers reads it
    // instead of config.json), else config.json's fields
    Seq2SeqGenerationSettings settings;
    for (const char *name : {"/generation_config.json", "/config.json"}) {
        const std::string path = dir + name;
        if (!regularFileSize(path, size))
            continue;
        nlohmann::json j;
        if (Status st = detail::readJsonFile(path, 1u << 20, j); !st)
            return st;
        if (!j.is_object())
            return Status::error(StatusCode::InvalidInput, path + ": not a JSON object");
        if (Status st = seq2seqmodel::readGenerationSettings(j, path, settings); !st)
            return st;
        break;
    }
    // mBART's languages at first: en_XX, the target the one the folder starts the decoder with
    // (mBART-cc25's decoder_start_token_id, as mbart-large-en-ro's names ro_RO) or forces first
    // (mBART-50's forced_bos_token_id), where it names one
    std::string source = "en_XX", target = "en_XX";
    if (mbart) {
        const int named = layout == MBartLayout::CC25 ? arch.seq2seq.decoderStartId : settings.forcedBosId;
        const std::vector<std::string> &codes = mbartLanguages(layout);
        if (std::find(codes.begin(), codes.end(), tokenizer->token(named)) != codes.end())
            target = tokenizer->token(named);
    }
    auto model = std::make_unique<EncoderDecoderModel>(arch, dir, std::move(w), archive.dtypeSummary(), std::move(tokenizer),
                                                       std::move(targetTokenizer), std::move(noTokenizer), std::move(settings));
    if (mbart)
        model->setMBart(layout, source, target);
    out = std::move(model);
    return {};
}

Status detail::openEncoderDecoderGguf(const std::string &path, const Architecture &arch, TensorArchive &archive,
                                      const families::TensorNames &names, std::unique_ptr<SubwordTokenizer> tokenizer,
                                      const std::string &dtype, const PretrainedLoadOptions &options,
                                      std::unique_ptr<Model> &out)
{
    archive.setProgress(options.progress);
    auto w = std::make_shared<Seq2SeqWeights<float>>();
    try {
        if (Status st = loadSeq2SeqWeights(archive, arch, names, *w); !st)
            return st;
    } catch (const std::bad_alloc &) {
        return Status::error(StatusCode::BackendFailed, path + ": out of memory reading " +
                                                            describeBytes(archive.totalBytes()) + " of weights");
    }
    out = std::make_unique<EncoderDecoderModel>(arch, path, std::move(w), dtype, std::move(tokenizer), nullptr,
                                                std::string(), Seq2SeqGenerationSettings());
    return {};
}

namespace {

// A T5 encoder without its decoder (llama.cpp's t5encoder files, as image-generation pipelines
// convert FLAN-T5's encoder): an encoder-only model whose layers are the encoder's blocks, the same
// arithmetic as the encoder of the encoder-decoder model (runSeq2SeqEncoder). No LM head: nothing
// is predicted. The user's masks and interventions are not computed for it; scores are kept where
// asked (T5's relative position bias is added to them and is not recoverable from q and k).
class T5EncoderModel final : public Model {
public:
    T5EncoderModel(Architecture arch, std::string path, std::shared_ptr<const Seq2SeqWeights<float>> w, std::string dtype,
                   std::unique_ptr<SubwordTokenizer> tokenizer)
        : m_arch(std::move(arch)), m_path(std::move(path)), m_float(std::move(w)), m_dtype(std::move(dtype)),
          m_tokenizer(std::move(tokenizer))
    {
    }

    ModelInfo info() const override
    {
        ModelInfo i;
        i.family = "t5encoder";
        i.name = seq2seqmodel::baseName(m_path);
        i.source = m_path;
        i.layers = m_arch.seq2seq.encoderLayers;
        i.heads = m_arch.heads;
        i.kvHeads = m_arch.kvHeads;
        i.dModel = m_arch.dModel;
        i.dHead = m_arch.dHead;
        i.dFeedForward = m_arch.dFeedForward;
        i.vocabulary = m_arch.vocabulary;
        i.maxPositions = 0; // relative positions: no table
        i.parameters = m_float->parameters;
        i.tokenizer = m_tokenizer ? m_tokenizer->kind() + " (" + std::to_string(m_tokenizer->vocabSize()) + ")" : "none (ids only)";
        i.dtype = m_dtype;
        i.weightBytes = m_float->parameters * int64_t(sizeof(float));
        i.causal = false;
        i.maskedLm = false;
        // what the views read: an encoder of `encoderLayers` blocks, bidirectional, no decoder
        i.architecture = m_arch;
        i.architecture.family = "t5encoder";
        i.architecture.encoderDecoder = false;
        i.architecture.layers = m_arch.seq2seq.encoderLayers;
        return i;
    }

    // T5Tokenizer's: SentencePiece's pieces, then </s>.
    Status tokenize(std::string_view text, std::vector<TraceToken> &out) const override
    {
        out.clear();
        if (!m_tokenizer)
            return Status::error(StatusCode::Unavailable, m_path + ": no tokenizer: only token ids trace");
        return m_tokenizer->encode(text, out);
    }

    std::string decode(const std::vector<int> &ids) const override { return m_tokenizer ? m_tokenizer->decode(ids) : std::string(); }

    Status trace(const TraceRequest &request, Trace<float> &out) override { return run(request, *m_float, out); }
    Status trace(const TraceRequest &request, Trace<double> &out) override
    {
        return run(request, *m_double.of(*m_float), out);
    }

private:
    template <typename T>
    Status run(const TraceRequest &request, const Seq2SeqWeights<T> &w, Trace<T> &out)
    {
        if (!request.edits.empty())
            return Status::error(StatusCode::Unavailable, "interventions in a T5 encoder (t5encoder) are not computed yet");
        if (!request.paddedKeys.empty() || !request.maskedCells.empty())
            return Status::error(StatusCode::Unavailable, "masks on a T5 encoder (t5encoder) are not computed yet");
        if (!request.keyText.empty())
            return Status::error(StatusCode::Unavailable, "a T5 encoder reads one text: no second sentence");
        std::vector<TraceToken> tokens;
        if (!request.ids.empty()) {
            for (int id : request.ids) {
                TraceToken t;
                t.id = id;
                t.text = m_tokenizer ? m_tokenizer->token(id) : std::to_string(id);
                t.display = t.text;
                t.special = id == m_arch.seq2seq.eosId || id == m_arch.seq2seq.padId;
                tokens.push_back(t);
            }
        } else if (Status st = tokenize(request.text, tokens); !st) {
            return st;
        }
        Trace<T> r;
        r.totalTokens = int(tokens.size());
        if (request.maxTokens > 0 && int(tokens.size()) > request.maxTokens) {
            tokens.resize(size_t(request.maxTokens));
            r.cutReason = "cut at " + std::to_string(request.maxTokens) + " tokens";
        }
        std::vector<int> ids;
        for (const TraceToken &t : tokens)
            ids.push_back(t.id);
        EncoderDecoderTrace<T> sq;
        if (Status st = runSeq2SeqEncoder(m_arch, w, ids, request.keepScores, request.cancel, sq); !st)
            return st;
        r.tokens = std::move(tokens);
        r.layers = std::move(sq.encoder);
        r.embeddings = sq.sourceEmbeddings;
        r.input = std::move(sq.sourceEmbeddings);
        r.final = std::move(sq.encoderFinal);
        r.device = "cpu";
        if (request.device)
            r.deviceNote = "a T5 encoder does not run on a device yet: the CPU computed";
        r.observed = Observe();
        out = std::move(r);
        return {};
    }

    Architecture m_arch; // the encoder-decoder shape the forward reads (its decoder absent)
    std::string m_path;
    std::shared_ptr<const Seq2SeqWeights<float>> m_float;
    seq2seqmodel::Float64Weights m_double;
    std::string m_dtype;
    std::unique_ptr<SubwordTokenizer> m_tokenizer;
};

} // namespace

Status detail::openT5EncoderGguf(const std::string &path, const Architecture &arch, TensorArchive &archive,
                                 const families::TensorNames &names, std::unique_ptr<SubwordTokenizer> tokenizer,
                                 const std::string &dtype, const PretrainedLoadOptions &options, std::unique_ptr<Model> &out)
{
    archive.setProgress(options.progress);
    auto w = std::make_shared<Seq2SeqWeights<float>>();
    try {
        if (Status st = loadSeq2SeqWeights(archive, arch, names, *w, false); !st)
            return st;
    } catch (const std::bad_alloc &) {
        return Status::error(StatusCode::BackendFailed, path + ": out of memory reading " +
                                                            describeBytes(archive.totalBytes()) + " of weights");
    }
    out = std::make_unique<T5EncoderModel>(arch, path, std::move(w), dtype, std::move(tokenizer));
    return {};
}

Status detail::seededEncoderDecoder(const Architecture &arch, uint64_t seed, std::unique_ptr<Model> &out)
{
    auto w = std::make_shared<Seq2SeqWeights<float>>();
    seedSeq2SeqWeights(arch, seed, *w);
    out = std::make_unique<EncoderDecoderModel>(arch, std::string(), std::move(w), "F32 (seeded)", nullptr, nullptr,
                                                "seeded model: no tokenizer, only token ids trace",
                                                Seq2SeqGenerationSettings());
    return {};
}

Status greedyTarget(Model &model, const TraceRequest &source, int maxNew, std::vector<int> &target)
{
    const Architecture arch = model.info().architecture;
    if (!arch.encoderDecoder)
        return Status::error(StatusCode::InvalidInput, model.info().name + ": not an encoder-decoder model");
    std::vector<int> ids;
    TraceRequest r = source;
    r.target.clear();
    r.topK = 1;
    r.allPredictions = false;
    Trace<double> t;
    for (int step = 0; step < maxNew; ++step) {
        r.targetIds = ids;
        if (ids.empty()) // the decoder reads its start token alone
            r.targetIds.clear();
        if (Status st = model.trace(r, t); !st)
            return st;
        const int next = t.predictions.next.back().front().id;
        ids.push_back(next);
        if (next == arch.seq2seq.eosId)
            break;
    }
    target = std::move(ids);
    return {};
}

Status runSeq2SeqBench(Model &model, int source, int target, int repeat, std::vector<ModelBenchRow> &rows)
{
    auto *m = dynamic_cast<EncoderDecoderModel *>(&model);
    if (!m)
        return Status::error(StatusCode::InvalidInput, model.info().name + ": not an encoder-decoder model");
    const ModelInfo info = model.info();
    std::mt19937 g(5);
    std::uniform_int_distribution<int> pick(std::min(1000, info.vocabulary / 2), info.vocabulary - 2);
    TraceRequest req;
    for (int i = 0; i < source; ++i)
        req.ids.push_back(pick(g));
    for (int i = 0; i < target; ++i)
        req.targetIds.push_back(pick(g));
    req.allPredictions = true; // as the window traces
    std::vector<double> runs;
    for (int r = 0; r < std::max(1, repeat); ++r) {
        Trace<float> fresh;
        const auto t0 = std::chrono::steady_clock::now();
        if (Status st = model.trace(req, fresh); !st)
            return st;
        runs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(runs.begin(), runs.end());
    rows.push_back({"full trace (" + std::to_string(source) + " source, " + std::to_string(target) + " target)", source + target,
                    runs[runs.size() / 2]});
    double ms = 0;
    if (Status st = m->timeStep(req.ids, req.targetIds, repeat, ms); !st)
        return st;
    rows.push_back({"one generated step (cached keys and values)", target + 1, ms});
    return {};
}

Status detail::seq2seqReadout(const Model &model, bool float64, Seq2SeqReadout &out)
{
    const auto *m = dynamic_cast<const EncoderDecoderModel *>(&model);
    if (!m)
        return Status::error(StatusCode::Unavailable, model.info().name + ": not an encoder-decoder model");
    m->fillReadout(float64, out);
    return {};
}

Status generationSettings(const Model &model, Seq2SeqGenerationSettings &out)
{
    const auto *m = dynamic_cast<const EncoderDecoderModel *>(&model);
    if (!m)
        return Status::error(StatusCode::InvalidInput, model.info().name + ": not an encoder-decoder model folder");
    out = m->settings();
    return {};
}

Status seq2seqLanguages(const Model &model, Seq2SeqLanguages &out)
{
    out = Seq2SeqLanguages();
    const auto *m = dynamic_cast<const EncoderDecoderModel *>(&model);
    return m ? m->languages(out) : Status();
}

Status setSeq2SeqLanguages(Model &model, const std::string &source, const std::string &target)
{
    auto *m = dynamic_cast<EncoderDecoderModel *>(&model);
    if (!m)
        return Status::error(StatusCode::InvalidInput, model.info().name + " (" + model.info().family +
                                                           ") reads no language codes: only mBART folders with "
                                                           "sentencepiece.bpe.model do");
    return m->setLanguages(source, target);
}

Status generateTarget(Model &model, const TraceRequest &source, const Seq2SeqGenerateOptions &options, Seq2SeqGeneration &out)
{
    auto *m = dynamic_cast<EncoderDecoderModel *>(&model);
    if (!m)
        return Status::error(StatusCode::InvalidInput, model.info().name + ": not an encoder-decoder model folder");
    return m->generate(source, options, out);
}

} // namespace attnviz
