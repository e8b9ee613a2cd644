// SPDX-License-Identifier: GPL-3.0-or-later
// AttentionTiles (attentiontiles.h): weights recomputed from q, k and each row's log-sum-exp equal the
// trace's full softmax on every tiny Hugging Face fixture family (llama, mistral's sliding window,
// qwen2/3, gemma2's soft-capping, gemma3's local and global layers, phi3, GPT-2, BERT; grouped-query
// heads), with and without the user's masks, in float32 (1e-6) and float64 (1e-12); its masks are
// the forward's; pooled maps (max, mean) equal pooling the full matrix, ragged edges and causal
// zeros included; the cell reads (a diagonal, the first keys, the recent window, listed cells, whole
// rows) equal the full matrix's cells; the tile cache stays within its bytes; a 16-bit model's long-text trace
// (Observe::sixteenBit) keeps q, k and v in 16 bits and its tiles are the softmax of those; one
// query's rollout row streamed through the tiles (rolloutrow.h) equals that row of the full rollout
// (headroles.h) on every family, past several blocks of rows on a seeded SmolLM2 shape, and stops
// when cancelled; a block of whole rows (rowBlock) is the same cells as a tile; weights times each
// key's value norm (setKeyWeights) equal the norm-weighted matrices (reads.h normWeighted), tiles,
// pooled maps and rollout rows.
#include "testpaths.h"
#include "attnviz/attentiontiles.h"
#include "attnviz/headroles.h"
#include "attnviz/memorybudget.h"
#include "attnviz/pretrained.h"
#include "attnviz/reads.h"
#include "attnviz/rolloutrow.h"
#include "modelchecks.h"

#include <QtTest>

#include <cmath>
#include <map>

using namespace attnviz;
using namespace attnviz::testing;

namespace {

// A trace of ids; with userMasks a padded key and two masked cells, so that no row loses every key.
TraceRequest request(const std::vector<int> &ids, bool userMasks)
{
    TraceRequest req;
    req.ids = ids;
    const int t = int(ids.size());
    if (userMasks) {
        req.paddedKeys = {1};
        req.maskedCells = {{t - 1, 0}, {t / 2, 2}};
    }
    return req;
}

const char *const kFolders[] = {"llama-tiny",  "llama2-tiny", "mistral-tiny",        "qwen2-tiny", "qwen3-tiny",
                                "gemma2-tiny", "gemma3-tiny", "gemma3-wrapper-tiny", "phi3-tiny",  "gpt2-tiny",
                                "bert-tiny"};

Model *opened(const QString &model)
{
    static std::map<QString, std::unique_ptr<Model>> models;
    std::unique_ptr<Model> &m = models[model];
    if (!m)
        m = open(model);
    return m.get();
}

// A seeded model of SmolLM2-135M's shape (9 heads, 3 key/value heads), two layers, the second with
// a sliding window of `window` keys and soft-capped scores where `softcap` > 0.
std::unique_ptr<Model> seededSmall(int window, double softcap)
{
    Architecture a;
    if (!seededShape("smollm2-135m", a))
        return nullptr;
    a.layers = 2;
    a.window = {0, window};
    a.vocabulary = 500;
    a.attentionSoftcap = softcap;
    std::unique_ptr<Model> m;
    if (!seededPretrained(a, 7, m).ok())
        return nullptr;
    return m;
}

std::vector<int> seededIds(int t)
{
    std::vector<int> ids;
    for (int i = 0; i < t; ++i)
        ids.push_back((37 * i + 11) % 500);
    return ids;
}

// The largest |a - b| of two matrices of the same shape (infinite when the shapes differ).
template <typename T>
double largestDifference(const Mat<T> &a, const Mat<T> &b)
{
    if (a.rows() != b.rows() || a.cols() != b.cols())
        return INFINITY;
    return a.size() ? (a.template cast<double>() - b.template cast<double>()).cwiseAbs().maxCoeff() : 0.0;
}

// Pools `full` as AttentionTiles::pooled documents, in float64.
Mat<double> poolFull(const Mat<double> &full, int r0, int r1, int c0, int c1, int outRows, int outCols, Pooling pool)
{
    const int R = r1 - r0, C = c1 - c0;
    Mat<double> out(outRows, outCols);
    for (int a = 0; a < outRows; ++a)
        for (int b = 0; b < outCols; ++b) {
            const int ra = r0 + int(int64_t(a) * R / outRows), rb = r0 + int(int64_t(a + 1) * R / outRows);
            const int ca = c0 + int(int64_t(b) * C / outCols), cb = c0 + int(int64_t(b + 1) * C / outCols);
            const auto cells = full.block(ra, ca, rb - ra, cb - ca);
            out(a, b) = pool == Pooling::Max ? cells.maxCoeff() : cells.mean();
        }
    return out;
}

// Every row of the rollout up to every layer, and its blocks of whole rows, read through the tiles of
// a trace that kept its weights (recomputed from q, k and the log-sum-exp), equal the full rollout's
// and the full matrices' (`rows`: the rows checked; empty: all).
template <typename T>
void checkRolloutRows(Model &m, const std::vector<int> &ids, bool userMasks, double tol, std::vector<int> rows = {})
{
    TraceRequest req = request(ids, userMasks);
    const int t = int(ids.size());
    Trace<T> tr;
    const Status st = m.trace(req, tr);
    QVERIFY2(st.ok(), st.message.c_str());
    std::vector<std::shared_ptr<const AttentionTiles<T>>> tiles;
    for (int l = 0; l < tr.numLayers(); ++l)
        tiles.push_back(std::make_shared<const AttentionTiles<T>>(tr, l, AttentionTiles<T>::Source::Recompute));
    const std::vector<Mat<double>> full = attentionRollout(tr);
    if (rows.empty())
        for (int i = 0; i < t; ++i)
            rows.push_back(i);
    RolloutRowRequest<T> rq;
    rq.layer = [&](int l) { return tiles[size_t(l)]; };
    for (int upTo = 0; upTo < tr.numLayers(); ++upTo) {
        int reported = 0;
        rq.progress = [&](int done, int total) {
            QCOMPARE(total, upTo + 1);
            reported = done;
        };
        rq.upTo = upTo;
        for (int i : rows) {
            rq.query = i;
            std::vector<double> row;
            const Status s = rolloutRow(rq, row);
            QVERIFY2(s.ok(), s.message.c_str());
            QCOMPARE(int(row.size()), t);
            QCOMPARE(reported, upTo + 1);
            double d = 0;
            for (int j = 0; j < t; ++j)
                d = std::max(d, std::abs(row[size_t(j)] - full[size_t(upTo)](i, j)));
            if (!(d <= tol))
                QFAIL(qPrintable(QStringLiteral("rollout up to layer %1, row %2: off by %3").arg(upTo).arg(i).arg(d)));
        }
    }
    for (int l = 0; l < tr.numLayers(); ++l)
        for (int h : {-1, 0})
            for (const auto &[r0, r1] : {std::pair<int, int>{0, t}, {t / 3, t - 1}, {t - 1, t}}) {
                int c0 = -1;
                const Mat<T> b = tiles[size_t(l)]->rowBlock(h, r0, r1, &c0);
                QVERIFY(c0 >= 0 && c0 + b.cols() <= t && b.rows() == r1 - r0);
                Mat<T> whole = Mat<T>::Zero(r1 - r0, t);
                whole.middleCols(c0, b.cols()) = b;
                const double d = largestDifference(whole, Mat<T>(tr.weights(l, h).toDense().middleRows(r0, r1 - r0)));
                if (!(d <= tol))
                    QFAIL(qPrintable(QStringLiteral("layer %1 head %2 rows %3..%4: rowBlock off by %5").arg(l).arg(h).arg(r0).arg(r1).arg(d)));
            }
}

template <typename T>
void checkRecomputed(Model &m, const std::vector<int> &ids, bool userMasks, double tol)
{
    TraceRequest req = request(ids, userMasks);
    const int t = int(ids.size());
    Trace<T> tr;
    const Status st = m.trace(req, tr);
    QVERIFY2(st.ok(), st.message.c_str());
    QCOMPARE(int(tr.tokens.size()), t);
    int windowed = 0;
    for (int l = 0; l < tr.numLayers(); ++l) {
        QVERIFY(AttentionTiles<T>::recomputable(tr, l));
        AttentionTiles<T> tiles(tr, l, AttentionTiles<T>::Source::Recompute);
        QVERIFY(tiles.valid());
        QVERIFY(tiles.recomputes());
        QCOMPARE(tiles.rows(), t);
        QCOMPARE(tiles.cols(), t);
        const SequenceResult<T> &s = tr.layers[size_t(l)].attention.batch[0];
        if (tr.layers[size_t(l)].attention.window > 0 && tr.layers[size_t(l)].attention.window < t)
            ++windowed;
        // the masks the tiles apply are the ones the forward recorded
        if (s.mask.size())
            for (int i = 0; i < t; ++i)
                for (int j = 0; j < t; ++j)
                    if (tiles.masked(i, j) != bool(s.mask(i, j)))
                        QFAIL(qPrintable(QStringLiteral("layer %1: mask (%2, %3) differs").arg(l).arg(i).arg(j)));
        for (int h = -1; h < tr.numHeads(); ++h) {
            const Mat<T> full = tr.weights(l, h).toDense();
            const double d = largestDifference(tiles.tile(h, 0, t, 0, t), full);
            if (!(d <= tol))
                QFAIL(qPrintable(QStringLiteral("layer %1 head %2: recomputed weights off by %3").arg(l).arg(h).arg(d)));
            // a block inside, away from the edges: the masks at an offset
            const int r0 = t / 3, r1 = t - 1, c0 = 1, c1 = t - t / 4;
            const double db = largestDifference(tiles.tile(h, r0, r1, c0, c1), Mat<T>(full.block(r0, c0, r1 - r0, c1 - c0)));
            if (!(db <= tol))
                QFAIL(qPrintable(QStringLiteral("layer %1 head %2: block off by %3").arg(l).arg(h).arg(db)));
        }
        // the stored weights through the same interface
        AttentionTiles<T> stored(tr, l);
        QVERIFY(stored.valid());
        QVERIFY(!stored.recomputes());
        QVERIFY(stored.tile(0, 0, t, 0, t) == tr.weights(l, 0).toDense());
    }
    const Architecture arch = m.info().architecture;
    bool bites = false; // a window narrower than the text
    for (int l = 0; l < arch.layers; ++l)
        bites = bites || (arch.windowOf(l) > 0 && arch.windowOf(l) < t);
    QCOMPARE(windowed > 0, bites);
}


// Bytes of the matrices a trace holds (its layers' stages, k, v, lse, weights, masks; the rest).
template <typename T>
uint64_t heldBytes(const Trace<T> &tr)
{
    uint64_t n = 0;
    auto add = [&](const auto &m) { n += uint64_t(m.size()) * sizeof(typename std::decay_t<decltype(m)>::Scalar); };
    for (const Mat<T> *m : {&tr.embeddings, &tr.input, &tr.final})
        add(*m);
    for (const LayerTrace<T> &l : tr.layers) {
        for (const Mat<T> *m : {&l.residualIn, &l.attentionIn, &l.afterAttention, &l.output, &l.mlpPre, &l.mlpPreLinear})
            add(*m);
        const SequenceResult<T> &s = l.attention.batch[0];
        for (const Mat<T> *m : {&s.q, &s.k, &s.v, &s.qPre, &s.kPre, &s.context, &s.output, &s.lse})
            add(*m);
        for (const WeightMatrix<T> &w : s.weights)
            n += uint64_t(w.storedSize()) * sizeof(T);
        n += uint64_t(s.weightsAvg.storedSize()) * sizeof(T);
        n += uint64_t(s.mask.size());
    }
    return n;
}

template <typename T>
void checkWithoutWeights(Model &m, const std::vector<int> &ids, bool userMasks, bool stages, double tol)
{
    TraceRequest req = request(ids, userMasks);
    const int t = int(ids.size());
    Trace<T> full;
    QVERIFY(m.trace(req, full).ok());
    req.observe.weights = false;
    req.observe.stages = stages;
    Trace<T> lean;
    const Status st = m.trace(req, lean);
    QVERIFY2(st.ok(), st.message.c_str());
    QVERIFY(!lean.observed.weights);
    QCOMPARE(lean.observed.stages, stages);
    // the same text: the same final states
    QVERIFY(largestDifference(lean.final, full.final) <= tol);
    const ModelInfo info = m.info();
    for (int l = 0; l < lean.numLayers(); ++l) {
        const SequenceResult<T> &s = lean.layers[size_t(l)].attention.batch[0];
        QVERIFY(s.weights.empty());
        QCOMPARE(s.weightsAvg.size(), Eigen::Index(0));
        QCOMPARE(s.mask.size(), Eigen::Index(0));
        QCOMPARE(int(s.q.rows()), t);
        QCOMPARE(int(s.lse.rows()), t);
        // without the stages, k per key/value head (grouped-query attention)
        QCOMPARE(int(s.k.cols()), (stages ? info.heads : info.kvHeads) * info.dHead);
        AttentionTiles<T> tiles(lean, l);
        QVERIFY(tiles.valid());
        QVERIFY(tiles.recomputes());
        for (int h = -1; h < lean.numHeads(); ++h) {
            const double d = largestDifference(tiles.tile(h, 0, t, 0, t), full.weights(l, h).toDense());
            if (!(d <= tol))
                QFAIL(qPrintable(QStringLiteral("layer %1 head %2: off by %3").arg(l).arg(h).arg(d)));
        }
        if (stages) // the other stages as a full trace's
            QVERIFY(largestDifference(s.context, full.layers[size_t(l)].attention.batch[0].context) <= tol);
    }
    // what it holds: linear in the text, within the estimate that follows the policy
    QVERIFY(heldBytes(lean) < heldBytes(full));
    QVERIFY(heldBytes(lean) <= traceBytes(info, t, sizeof(T), false, 0, false, false, stages));
}


// The bounds checkSixteenBit holds the 16-bit forward to (see there).
constexpr double kSixteenBitFinal = 5e-2, kSixteenBitLogit = 0.5;

// The tiles of layer `l` of a 16-bit trace are the exact softmax of the scores of the q and k it keeps
// (float64, 1e-6), and each row sums to 1 (the forward's log-sum-exp is that of the kept q and k).
void checkKeptSoftmax(const Trace<float> &tr, int l, const AttentionTiles<float> &tiles)
{
    const AttentionResult<float> &R = tr.layers[size_t(l)].attention;
    const SequenceResult<float> &s = R.batch[0];
    const int t = tiles.rows();
    const Mat<double> q = s.q16.widened<double>(), k = s.k16.widened<double>();
    for (int h = 0; h < R.numHeads; ++h) {
        const int kh = R.kvHeadOf(h);
        Mat<double> sc = R.scale * q.middleCols(h * R.dHead, R.dHead) * k.middleCols(kh * R.dHead, R.dHead).transpose();
        if (R.softcap > 0)
            sc = ((sc.array() / R.softcap).tanh() * R.softcap).matrix();
        Mat<double> ref(t, t);
        for (int i = 0; i < t; ++i) {
            double mx = -INFINITY;
            for (int j = 0; j < t; ++j)
                if (!tiles.masked(i, j))
                    mx = std::max(mx, sc(i, j));
            double sum = 0;
            for (int j = 0; j < t; ++j)
                sum += ref(i, j) = tiles.masked(i, j) ? 0.0 : std::exp(sc(i, j) - mx);
            ref.row(i) /= sum;
        }
        const Mat<float> w = tiles.tile(h, 0, t, 0, t);
        const double d = largestDifference(Mat<double>(w.cast<double>()), ref);
        if (!(d <= 1e-6))
            QFAIL(qPrintable(QStringLiteral("layer %1 head %2: off the softmax of the kept q, k by %3").arg(l).arg(h).arg(d)));
        const double rowSum = (w.cast<double>().rowwise().sum().array() - 1.0).abs().maxCoeff();
        if (!(rowSum <= 1e-6))
            QFAIL(qPrintable(QStringLiteral("layer %1 head %2: a row sums to 1 +- %3").arg(l).arg(h).arg(rowSum)));
    }
}

// A trace that keeps no weights nor stages with Observe::sixteenBit, of a model whose weights are BF16:
// every layer keeps q, k and v in 16 bits (their float copies empty; the bytes are 16-bit's), its tiles
// are the exact softmax of the scores of those q and k (float64, 1e-6; each row sums to 1: the forward
// computed its log-sum-exp from the rounded q and k), and its outputs differ from the float forward's
// by rounding only: the final states by at most `finalBound`, the last position's top logit by at most
// `logitBound` (measured on the fixtures, with a margin), yet not at all would mean nothing was rounded.
void checkSixteenBit(Model &m, const std::vector<int> &ids, bool userMasks, double finalBound, double logitBound)
{
    TraceRequest req = request(ids, userMasks);
    const int t = int(ids.size());
    Trace<float> full;
    QVERIFY(m.trace(req, full).ok());
    req.observe.weights = false;
    req.observe.stages = false;
    req.observe.sixteenBit = true;
    Trace<float> lean;
    const Status st = m.trace(req, lean);
    QVERIFY2(st.ok(), st.message.c_str());
    QVERIFY(lean.observed.sixteenBit);
    const ModelInfo info = m.info();
    for (int l = 0; l < lean.numLayers(); ++l) {
        const AttentionResult<float> &R = lean.layers[size_t(l)].attention;
        const SequenceResult<float> &s = R.batch[0];
        QCOMPARE(s.q.size() + s.k.size() + s.v.size(), Eigen::Index(0));
        QVERIFY(s.q16.kind == HalfRows::Kind::BF16);
        QCOMPARE(s.q16.bytes(), size_t(t) * size_t(info.heads * info.dHead) * 2);
        QCOMPARE(s.k16.bytes(), size_t(t) * size_t(info.kvHeads * info.dHead) * 2);
        QCOMPARE(s.v16.bytes(), size_t(t) * size_t(info.kvHeads * info.dHead) * 2);
        QVERIFY(AttentionTiles<float>::recomputable(lean, l));
        AttentionTiles<float> tiles(lean, l);
        QVERIFY(tiles.valid() && tiles.recomputes());
        QCOMPARE(tiles.rows(), t);
        checkKeptSoftmax(lean, l, tiles);
        // a reader of the layer's whole v widens it: the value norms of the 16-bit values, the float
        // forward's within rounding
        Mat<float> norms, fullNorms;
        QVERIFY(valueNorms(lean, l, norms).ok());
        QVERIFY(valueNorms(full, l, fullNorms).ok());
        QVERIFY(largestDifference(norms, fullNorms) <= kSixteenBitFinal * double(fullNorms.maxCoeff()));
    }
    // the final states off by at most finalBound of their largest magnitude
    const double finalOff = largestDifference(lean.final, full.final) / double(full.final.cwiseAbs().maxCoeff());
    auto topLogit = [](const Trace<float> &tr) {
        return std::log(tr.predictions.next.back().front().p) + tr.predictions.logNormalizer.back();
    };
    QCOMPARE(lean.predictions.next.back().front().id, full.predictions.next.back().front().id);
    const double logitOff = std::abs(topLogit(lean) - topLogit(full));
    qInfo("%s: final states off by %.3g of their largest, top logit by %.3g", qPrintable(QString::fromStdString(info.name)),
          finalOff, logitOff);
    QVERIFY(finalOff > 0);
    QVERIFY2(finalOff <= finalBound, qPrintable(QString::number(finalOff)));
    QVERIFY2(logitOff <= logitBound, qPrintable(QString::number(logitOff)));
}
} // namespace

class TestAttentionTiles : public QObject {
    Q_OBJECT
private slots:
    void recomputedEqualsFull_data();
    void recomputedEqualsFull();
    void pooledEqualsPoolingFull_data();
    void pooledEqualsPoolingFull();
    void regionsAndHeadsClamped();
    void cacheBoundedByBytes();
    void withoutWeights_data();
    void withoutWeights();
    void typedWithoutWeights_data();
    void typedWithoutWeights();
    void estimateFollowsPolicy();
    void sixteenBit_data();
    void sixteenBit();
    void typedSixteenBit();
    void spareLayersExact();
    void cellReadsEqualFull_data();
    void cellReadsEqualFull();
    void rolloutRowEqualsFull_data();
    void rolloutRowEqualsFull();
    void rolloutRowPastBlocks();
    void keyWeightedEqualsNormWeighted();
    void rowSharesEqualMadeShares();
};

void TestAttentionTiles::recomputedEqualsFull_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("float64");
    QTest::addColumn<bool>("userMasks");
    for (const char *m : kFolders)
        for (bool f64 : {false, true})
            for (bool masks : {false, true})
                QTest::addRow("%s %s%s", m, f64 ? "float64" : "float32", masks ? " masked" : "")
                    << QString::fromLatin1(m) << f64 << masks;
}

// Every layer's and head's weights (and their mean), whole and a block, recomputed from q, k and the
// log-sum-exp, equal the trace's: 1e-12 in float64; 1e-6 in float32, where the forward and a tile
// form every score by the same sum (scoreBlock) and rounding the log-sum-exp moves a weight by about
// |lse| x 6e-8 of itself.
void TestAttentionTiles::recomputedEqualsFull()
{
    QFETCH(QString, model);
    QFETCH(bool, float64);
    QFETCH(bool, userMasks);
    Model *m = opened(model);
    QVERIFY(m);
    const std::vector<int> ids = idsOf(cases(model).first().toObject());
    QVERIFY(ids.size() >= 9);
    if (float64)
        checkRecomputed<double>(*m, ids, userMasks, 1e-12);
    else
        checkRecomputed<float>(*m, ids, userMasks, 1e-6);
}

void TestAttentionTiles::pooledEqualsPoolingFull_data()
{
    QTest::addColumn<int>("tokens");
    QTest::addColumn<int>("layer");
    QTest::addColumn<int>("head");
    QTest::addColumn<QRect>("region"); // x: first key, y: first row, width: keys, height: rows
    QTest::addColumn<QSize>("out");    // width: output columns, height: output rows
    QTest::addColumn<double>("softcap");
    // t not a multiple of the output: ragged cells; a causal region with whole cells of zeros
    QTest::newRow("whole 150 to 7x11") << 150 << 0 << 4 << QRect(0, 0, 150, 150) << QSize(11, 7) << 0.0;
    QTest::newRow("whole 150 to 32x32") << 150 << 0 << 0 << QRect(0, 0, 150, 150) << QSize(32, 32) << 0.0;
    QTest::newRow("cells themselves") << 150 << 0 << 8 << QRect(0, 0, 150, 150) << QSize(150, 150) << 0.0;
    QTest::newRow("head mean") << 150 << 0 << -1 << QRect(0, 0, 150, 150) << QSize(13, 17) << 0.0;
    QTest::newRow("region") << 150 << 0 << 2 << QRect(5, 13, 145, 128) << QSize(9, 10) << 0.0;
    QTest::newRow("above the diagonal") << 150 << 0 << 2 << QRect(100, 0, 50, 60) << QSize(5, 6) << 0.0;
    QTest::newRow("one cell") << 150 << 0 << 1 << QRect(0, 0, 150, 150) << QSize(1, 1) << 0.0;
    QTest::newRow("window") << 150 << 1 << 3 << QRect(0, 0, 150, 150) << QSize(23, 19) << 0.0;
    QTest::newRow("window, head mean") << 150 << 1 << -1 << QRect(20, 30, 120, 120) << QSize(16, 16) << 0.0;
    QTest::newRow("soft-capped window") << 150 << 1 << 5 << QRect(0, 0, 150, 150) << QSize(12, 12) << 5.0;
    QTest::newRow("longer than a block") << 600 << 1 << 6 << QRect(0, 0, 600, 600) << QSize(7, 5) << 0.0;
    QTest::newRow("longer, head mean") << 600 << 0 << -1 << QRect(0, 0, 600, 600) << QSize(64, 64) << 0.0;
}

// A pooled map (max and mean) equals pooling the trace's full matrix, float32 and float64.
void TestAttentionTiles::pooledEqualsPoolingFull()
{
    QFETCH(int, tokens);
    QFETCH(int, layer);
    QFETCH(int, head);
    QFETCH(QRect, region);
    QFETCH(QSize, out);
    QFETCH(double, softcap);
    std::unique_ptr<Model> m = seededSmall(40, softcap);
    QVERIFY(m);
    TraceRequest req;
    req.ids = seededIds(tokens);
    Trace<float> tf;
    QVERIFY(m->trace(req, tf).ok());
    Trace<double> td;
    QVERIFY(m->trace(req, td).ok());
    const int r0 = region.y(), r1 = region.y() + region.height(), c0 = region.x(), c1 = region.x() + region.width();
    for (Pooling pool : {Pooling::Max, Pooling::Mean}) {
        {
            AttentionTiles<float> tiles(tf, layer, AttentionTiles<float>::Source::Recompute);
            QVERIFY(tiles.valid());
            const Mat<double> want = poolFull(tf.weights(layer, head).toDense().cast<double>(), r0, r1, c0, c1,
                                              out.height(), out.width(), pool);
            const Mat<float> got = tiles.pooled(head, r0, r1, c0, c1, out.height(), out.width(), pool);
            const double d = largestDifference(Mat<double>(got.cast<double>()), want);
            QVERIFY2(d <= 1e-6, qPrintable(QStringLiteral("float32 pooled off by %1").arg(d)));
            // stored weights pooled through the same interface
            AttentionTiles<float> stored(tf, layer);
            QVERIFY(!stored.recomputes());
            const Mat<float> gotStored = stored.pooled(head, r0, r1, c0, c1, out.height(), out.width(), pool);
            QVERIFY(largestDifference(Mat<double>(gotStored.cast<double>()), want) <= 1e-6);
        }
        AttentionTiles<double> tiles(td, layer, AttentionTiles<double>::Source::Recompute);
        const Mat<double> want = poolFull(td.weights(layer, head).toDense(), r0, r1, c0, c1, out.height(), out.width(), pool);
        const Mat<double> got = tiles.pooled(head, r0, r1, c0, c1, out.height(), out.width(), pool);
        const double d = largestDifference(got, want);
        QVERIFY2(d <= 1e-12, qPrintable(QStringLiteral("float64 pooled off by %1").arg(d)));
        if (r0 == 0 && c0 == 0 && c1 == tokens && out.width() == out.height() && out.width() > 1 && out.width() < tokens) {
            // causal: the top-right cell is all zeros, the diagonal's are not
            QCOMPARE(got(0, out.width() - 1), 0.0);
            QVERIFY(got(out.height() - 1, out.width() - 1) > 0);
        }
    }
}

// Regions beyond the matrix are clamped to it, a head past the last is the mean, and the output
// never has more cells than the region.
void TestAttentionTiles::regionsAndHeadsClamped()
{
    std::unique_ptr<Model> m = seededSmall(0, 0);
    QVERIFY(m);
    TraceRequest req;
    req.ids = seededIds(20);
    Trace<double> tr;
    QVERIFY(m->trace(req, tr).ok());
    AttentionTiles<double> tiles(tr, 0, AttentionTiles<double>::Source::Recompute);
    QCOMPARE(tiles.numHeads(), 9);
    const Mat<double> whole = tiles.tile(-1, -5, 100, -3, 40);
    QCOMPARE(int(whole.rows()), 20);
    QCOMPARE(int(whole.cols()), 20);
    QVERIFY(largestDifference(whole, tr.weights(0, -1).toDense()) <= 1e-12);
    QVERIFY(largestDifference(tiles.tile(9, 0, 20, 0, 20), whole) == 0);
    const Mat<double> map = tiles.pooled(0, 0, 20, 0, 20, 50, 3, Pooling::Mean);
    QCOMPARE(int(map.rows()), 20);
    QCOMPARE(int(map.cols()), 3);
    QCOMPARE(tiles.pooled(0, 5, 5, 0, 20, 4, 4, Pooling::Max).size(), Eigen::Index(0));
    // no log-sum-exp, no recomputing: a layer index past the last
    AttentionTiles<double> none(tr, 2, AttentionTiles<double>::Source::Recompute);
    QVERIFY(!none.valid());
    QCOMPARE(none.tile(0, 0, 20, 0, 20).size(), Eigen::Index(0));
}

// Tiles come back from the cache as they were computed; the least recently used leave first, and
// the cache never holds more bytes than its capacity.
void TestAttentionTiles::cacheBoundedByBytes()
{
    std::unique_ptr<Model> m = seededSmall(0, 0);
    QVERIFY(m);
    TraceRequest req;
    req.ids = seededIds(64);
    Trace<float> tr;
    QVERIFY(m->trace(req, tr).ok());
    const size_t tileBytes = 16 * 16 * sizeof(float);
    AttentionTiles<float> tiles(tr, 0, AttentionTiles<float>::Source::Recompute, 3 * tileBytes);
    QCOMPARE(tiles.cacheCapacity(), 3 * tileBytes);
    const Mat<float> a = tiles.tile(0, 0, 16, 0, 16);
    QCOMPARE(tiles.cachedEntries(), 1);
    QCOMPARE(tiles.cachedBytes(), tileBytes);
    QVERIFY(tiles.tile(0, 0, 16, 0, 16) == a); // a hit: the same values
    QCOMPARE(tiles.cachedEntries(), 1);
    for (int k = 1; k <= 4; ++k)
        tiles.tile(0, 16 * (k % 4), 16 * (k % 4) + 16, 16, 32);
    QVERIFY(tiles.cachedBytes() <= 3 * tileBytes);
    QCOMPARE(tiles.cachedEntries(), 3);
    const Mat<float> big = tiles.tile(1, 0, 64, 0, 64); // larger than the whole cache: not kept
    QCOMPARE(tiles.cachedEntries(), 3);
    QVERIFY(big == tiles.tile(1, 0, 64, 0, 64));
    tiles.clearCache();
    QCOMPARE(tiles.cachedEntries(), 0);
    QCOMPARE(tiles.cachedBytes(), size_t(0));
    QVERIFY(tiles.tile(0, 0, 16, 0, 16) == a); // computed anew: the same values
}

void TestAttentionTiles::withoutWeights_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("float64");
    QTest::addColumn<bool>("userMasks");
    QTest::addColumn<bool>("stages");
    for (const char *m : kFolders)
        for (bool f64 : {false, true})
            for (bool masks : {false, true})
                for (bool stages : {true, false})
                    QTest::addRow("%s %s%s%s", m, f64 ? "float64" : "float32", masks ? " masked" : "",
                                  stages ? "" : " no stages")
                        << QString::fromLatin1(m) << f64 << masks << stages;
}

// A trace that keeps no t x t weights (Observe::weights false) keeps q, k, v and the log-sum-exp in
// every layer, no weights, means or masks; its tiles equal the weights of a trace that keeps them
// (1e-6 float32, 1e-12 float64, as above), its other stages are the same, and it holds less, within
// the memory estimate of that policy.
void TestAttentionTiles::withoutWeights()
{
    QFETCH(QString, model);
    QFETCH(bool, float64);
    QFETCH(bool, userMasks);
    QFETCH(bool, stages);
    Model *m = opened(model);
    QVERIFY(m);
    const std::vector<int> ids = idsOf(cases(model).first().toObject());
    if (float64)
        checkWithoutWeights<double>(*m, ids, userMasks, stages, 1e-12);
    else
        checkWithoutWeights<float>(*m, ids, userMasks, stages, 1e-6);
}

void TestAttentionTiles::typedWithoutWeights_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("stages");
    for (const char *m : {"mistral-tiny", "qwen3-tiny", "gemma2-tiny", "gpt2-tiny"})
        for (bool stages : {true, false})
            QTest::addRow("%s%s", m, stages ? "" : " no stages") << QString::fromLatin1(m) << stages;
}

// Typing token by token into one trace that keeps no weights (its rows' q, k and log-sum-exp kept and
// grown, the new ones computed) gives the tiles of a fresh trace of the whole text; a trace that
// keeps the weights is not continued by one that keeps none, nor the reverse, without recomputing.
void TestAttentionTiles::typedWithoutWeights()
{
    QFETCH(QString, model);
    QFETCH(bool, stages);
    Model *m = opened(model);
    QVERIFY(m);
    const std::vector<int> ids = idsOf(cases(model).first().toObject());
    Trace<double> typed;
    TraceRequest req;
    req.observe.weights = false;
    req.observe.stages = stages;
    for (size_t n = 1; n <= ids.size(); ++n) {
        req.ids.assign(ids.begin(), ids.begin() + long(n));
        if (n == ids.size() / 2) { // one keystroke with the weights kept, then none again
            TraceRequest whole = req;
            whole.observe = Observe();
            QVERIFY(m->trace(whole, typed).ok());
            QCOMPARE(int(typed.layers[0].attention.batch[0].weights.size()), typed.numHeads());
        }
        QVERIFY(m->trace(req, typed).ok());
        QVERIFY(typed.layers[0].attention.batch[0].weights.empty());
        TraceRequest full;
        full.ids = req.ids;
        Trace<double> fresh;
        QVERIFY(m->trace(full, fresh).ok());
        const int t = int(n);
        for (int l = 0; l < typed.numLayers(); ++l) {
            AttentionTiles<double> tiles(typed, l);
            QVERIFY(tiles.recomputes());
            for (int h = -1; h < typed.numHeads(); ++h) {
                const double d = largestDifference(tiles.tile(h, 0, t, 0, t), fresh.weights(l, h).toDense());
                if (!(d <= 1e-12))
                    QFAIL(qPrintable(QStringLiteral("%1 tokens, layer %2 head %3: off by %4").arg(t).arg(l).arg(h).arg(d)));
            }
        }
    }
}

// The memory estimate follows the policy: without the weights it grows linearly with the text, and
// Llama-3.2-1B's shape at 8,192 tokens fits the 4 GB one computation may use where keeping every
// head's weights would need tens of gigabytes.
void TestAttentionTiles::estimateFollowsPolicy()
{
    Architecture a;
    QVERIFY(seededShape("llama3.2-1b", a));
    ModelInfo info;
    info.name = "llama3.2-1b";
    info.layers = a.layers;
    info.heads = a.heads;
    info.kvHeads = a.kvHeads;
    info.dModel = a.dModel;
    info.dHead = a.dHead;
    info.dFeedForward = a.dFeedForward;
    info.causal = true;
    info.maxPositions = a.maxPositions;
    info.architecture = a;
    const uint64_t kept = traceBytes(info, 8192, 4, false);
    const uint64_t lean = traceBytes(info, 8192, 4, false, 0, false, false, false);
    QVERIFY(kept > uint64_t(60) * 1000 * 1000 * 1000);
    QVERIFY(lean < uint64_t(4) * 1000 * 1000 * 1000);
    // linear: twice the text, at most a little more than twice the bytes (the text's t x t masks)
    const uint64_t lean2 = traceBytes(info, 16384, 4, false, 0, false, false, false);
    QVERIFY(lean2 < lean * 2 + uint64_t(2) * 16384 * 16384);
    // the stages kept: more, still linear
    QVERIFY(traceBytes(info, 8192, 4, false, 0, false, false, true) > lean);
    QCOMPARE(checkTraceMemory(info, 8192, 4, false, 0, false, false, false).ok(), lean <= memoryBudget());
    QVERIFY(!checkTraceMemory(info, 8192, 4, false).ok());
    QVERIFY(tokensWithin(info, memoryBudget(), 4, false, 0, false, false, false) > tokensWithin(info, memoryBudget(), 4, false));
    // q, k and v in 16 bits: 2 bytes a number fewer for each, every layer (the log-sum-exp stays float);
    // the layer being computed holds its own in float, W_O's output in q's rows instead of its own
    const uint64_t half = traceBytes(info, 8192, 4, false, 0, false, false, false, true);
    const uint64_t qkv = uint64_t(a.heads * a.dHead + 2 * a.kvHeads * a.dHead) * 8192 * uint64_t(a.layers);
    const uint64_t inner = uint64_t(std::max(a.dModel, a.heads * a.dHead));
    QCOMPARE(lean - half, qkv * 2 - (inner + 2 * uint64_t(a.kvHeads * a.dHead) - uint64_t(a.dModel)) * 8192 * 4);
    QVERIFY(tokensWithin(info, uint64_t(1) << 30, 4, false, 0, false, false, false, true) >
            tokensWithin(info, uint64_t(1) << 30, 4, false, 0, false, false, false));
    // kept in 16 bits where the weights are: a checkpoint's type, a seeded shape's, a mixed archive's first
    for (const char *d : {"BF16", "F16", "BF16 (seeded)", "BF16+F32"}) {
        info.dtype = d;
        QVERIFY2(sixteenBitKept(info), d);
    }
    for (const char *d : {"F32", "F32 (seeded)", "Q4_K (GGUF; Q4_K, Q6_K)", ""}) {
        info.dtype = d;
        QVERIFY2(!sixteenBitKept(info), d);
    }
    // the check before a trace counts them so: the most tokens 16-bit rows fit are refused in float32
    info.maxPositions = 1 << 20; // positions enough to reach the budget (a rotary model read longer)
    const int halfFit = tokensWithin(info, memoryBudget(), 4, false, 0, false, false, false, true);
    QVERIFY(halfFit > 0 && halfFit < info.maxPositions);
    QVERIFY(checkTraceMemory(info, halfFit, 4, false, 0, false, false, false, true).ok());
    QVERIFY(!checkTraceMemory(info, halfFit + 1, 4, false, 0, false, false, false, true).ok());
    QVERIFY(!checkTraceMemory(info, halfFit, 4, false, 0, false, false, false).ok());
    // with the stages kept or the weights, no 16-bit rows: unchanged
    QCOMPARE(traceBytes(info, 8192, 4, false, 0, false, false, true, true), traceBytes(info, 8192, 4, false, 0, false, false, true));
    QCOMPARE(traceBytes(info, 1024, 4, false, 0, false, true, true, true), traceBytes(info, 1024, 4, false));
}

void TestAttentionTiles::sixteenBit_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("userMasks");
    for (const char *m : {"llama-tiny", "qwen2-tiny", "qwen3-tiny", "gemma3-tiny", "phi3-tiny"})
        for (bool masks : {false, true})
            QTest::addRow("%s%s", m, masks ? " masked" : "") << QString::fromLatin1(m) << masks;
}

void TestAttentionTiles::sixteenBit()
{
    QFETCH(QString, model);
    QFETCH(bool, userMasks);
    Model *m = opened(model);
    QVERIFY(m);
    checkSixteenBit(*m, idsOf(cases(model).first().toObject()), userMasks, kSixteenBitFinal, kSixteenBitLogit);
}

// Typing token by token into one 16-bit trace (its rows' q, k, v widened back, grown and kept in 16
// bits again): the kept rows' bits stay as they were, the tiles are the softmax of the kept q and k, and
// the final states are a fresh 16-bit trace's within the rounding bound (a row computed in another block
// may round to the other neighbouring 16-bit value); a float trace is not continued by a 16-bit one.
void TestAttentionTiles::typedSixteenBit()
{
    Architecture a; // SmolLM2-135M's shape, two layers (the second with a window of 5 keys), BF16 weights
    QVERIFY(seededShape("smollm2-135m", a));
    a.layers = 2;
    a.window = {0, 5};
    a.vocabulary = 500;
    std::unique_ptr<Model> m;
    QVERIFY(seededPretrained(a, 7, m, "BF16").ok());
    const std::vector<int> ids = seededIds(24);
    Trace<float> typed;
    TraceRequest req;
    req.observe.weights = false;
    req.observe.stages = false;
    req.observe.sixteenBit = true;
    std::vector<std::vector<uint16_t>> before; // each layer's kept k bits before the keystroke
    for (size_t n = 1; n <= ids.size(); ++n) {
        req.ids.assign(ids.begin(), ids.begin() + long(n));
        if (n == ids.size() / 2) { // one keystroke in float, then 16 bits again
            TraceRequest f = req;
            f.observe.sixteenBit = false;
            QVERIFY(m->trace(f, typed).ok());
            QVERIFY(typed.layers[0].attention.batch[0].q16.empty());
            before.clear();
        }
        QVERIFY(m->trace(req, typed).ok());
        Trace<float> fresh;
        QVERIFY(m->trace(req, fresh).ok());
        const double off = largestDifference(typed.final, fresh.final) / double(fresh.final.cwiseAbs().maxCoeff());
        if (!(off <= kSixteenBitFinal))
            QFAIL(qPrintable(QStringLiteral("%1 tokens: final states off a fresh trace's by %2").arg(n).arg(off)));
        const int t = int(n);
        std::vector<std::vector<uint16_t>> now;
        for (int l = 0; l < typed.numLayers(); ++l) {
            const SequenceResult<float> &s = typed.layers[size_t(l)].attention.batch[0];
            QCOMPARE(int(s.k16.rows), t);
            QCOMPARE(s.q.size() + s.k.size() + s.v.size(), Eigen::Index(0));
            // the rows kept from the keystroke before: the same bits
            if (!before.empty())
                QVERIFY(std::equal(before[size_t(l)].begin(), before[size_t(l)].end(), s.k16.bits.begin()));
            now.push_back(s.k16.bits);
            AttentionTiles<float> tiles(typed, l);
            QVERIFY(tiles.recomputes());
            checkKeptSoftmax(typed, l, tiles);
        }
        before = now;
    }
}

// A layer computed without its stages (in the spare buffers: the stream added into in place, the
// context in its input's rows) computes exactly what a layer keeping them computes: a trace keeping no
// stage, one keeping the second layer's (the layer after it starts a stream of its own) and one keeping
// everything have the same final states and log-sum-exps, bit for bit. The same with 16-bit rows (W_O's
// output in q's float rows): run twice, the same bits.
void TestAttentionTiles::spareLayersExact()
{
    Architecture a; // SmolLM2-135M's shape (grouped-query heads), four layers, the third with a window
    QVERIFY(seededShape("smollm2-135m", a));
    a.layers = 4;
    a.window = {0, 0, 6, 0};
    a.vocabulary = 500;
    std::unique_ptr<Model> m;
    const Status st = seededPretrained(a, 7, m, "F32");
    QVERIFY2(st.ok(), st.message.c_str());
    TraceRequest req;
    req.ids = seededIds(40);
    Trace<float> full;
    QVERIFY(m->trace(req, full).ok());
    req.observe.weights = false;
    for (bool second : {false, true}) {
        req.observe.stages = second;
        req.observe.layers = second ? std::vector<int>{1} : std::vector<int>{};
        Trace<float> lean;
        QVERIFY(m->trace(req, lean).ok());
        QCOMPARE(lean.layers[0].attentionIn.size(), Eigen::Index(0));
        QCOMPARE(lean.layers[1].attentionIn.size() > 0, second);
        QCOMPARE(largestDifference(lean.final, full.final), 0.0);
        for (int l = 0; l < a.layers; ++l)
            QCOMPARE(largestDifference(lean.layers[size_t(l)].attention.batch[0].lse,
                                       full.layers[size_t(l)].attention.batch[0].lse),
                     0.0);
    }
    std::unique_ptr<Model> half;
    QVERIFY(seededPretrained(a, 7, half, "BF16").ok());
    req.observe.stages = false;
    req.observe.layers.clear();
    req.observe.sixteenBit = true;
    Trace<float> once, twice;
    QVERIFY(half->trace(req, once).ok());
    QVERIFY(half->trace(req, twice).ok());
    QCOMPARE(largestDifference(once.final, twice.final), 0.0);
    for (int l = 0; l < a.layers; ++l) {
        const SequenceResult<float> &s = once.layers[size_t(l)].attention.batch[0];
        QVERIFY(!s.q16.empty() && s.q.size() == 0 && s.context.size() == 0 && s.output.size() == 0);
        QVERIFY(s.q16.bits == twice.layers[size_t(l)].attention.batch[0].q16.bits);
    }
}

void TestAttentionTiles::cellReadsEqualFull_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("userMasks");
    // grouped-query heads (llama), a sliding window narrower than the text (mistral), soft-capped
    // scores (gemma2), an encoder that reads both ways (bert)
    for (const char *m : {"llama-tiny", "mistral-tiny", "gemma2-tiny", "bert-tiny"})
        for (bool masks : {false, true})
            QTest::addRow("%s%s", m, masks ? " masked" : "") << QString::fromLatin1(m) << masks;
}

// Every cell read of a trace that keeps no weights (recomputed) equals the same cells of the full
// matrices of a trace that keeps them (1e-6, float32); read from the stored weights, the very cells.
void TestAttentionTiles::cellReadsEqualFull()
{
    QFETCH(QString, model);
    QFETCH(bool, userMasks);
    Model *m = opened(model);
    QVERIFY(m);
    const std::vector<int> ids = idsOf(cases(model).first().toObject());
    const int t = int(ids.size());
    QVERIFY(t >= 9);
    TraceRequest req = request(ids, userMasks);
    Trace<float> full, lean;
    QVERIFY(m->trace(req, full).ok());
    req.observe.weights = false;
    QVERIFY(m->trace(req, lean).ok());
    const std::vector<std::pair<int, int>> list = {{0, 0}, {t - 1, 0}, {t / 2, 2}, {3, 1}, {t - 1, t - 1}, {2, t - 1},
                                                   {t - 2, t - 5}, {-1, 0}, {0, t}};
    const std::vector<int> rows = {0, 1, t / 2, t - 1};
    for (int l = 0; l < full.numLayers(); ++l) {
        AttentionTiles<float> rec(lean, l), stored(full, l);
        QVERIFY(rec.valid() && rec.recomputes());
        QVERIFY(stored.valid() && !stored.recomputes());
        for (int h = -1; h < full.numHeads(); ++h) {
            const Mat<float> w = full.weights(l, h).toDense();
            auto at = [&](int i, int j) { return i >= 0 && i < t && j >= 0 && j < t ? double(w(i, j)) : 0.0; };
            const QString where = QStringLiteral("layer %1 head %2").arg(l).arg(h);
            for (const AttentionTiles<float> *tiles : {&rec, &stored}) {
                const double tol = tiles == &stored ? 0.0 : 1e-6;
                for (int offset : {-1, 0, -3, 2}) {
                    const std::vector<float> d = tiles->diagonal(h, offset);
                    QCOMPARE(int(d.size()), t);
                    for (int i = 0; i < t; ++i)
                        if (!(std::abs(d[size_t(i)] - at(i, i + offset)) <= tol))
                            QFAIL(qPrintable(where + QStringLiteral(": diagonal %1 row %2").arg(offset).arg(i)));
                }
                for (int k : {1, 4, t + 3}) {
                    const Mat<float> lead = tiles->leading(h, k);
                    QCOMPARE(int(lead.cols()), std::min(k, t));
                    QVERIFY(largestDifference(lead, Mat<float>(w.leftCols(std::min(k, t)))) <= tol);
                }
                for (int win : {1, 3, 6, t + 2}) {
                    const Mat<float> r = tiles->recent(h, win);
                    QCOMPARE(int(r.rows()), t);
                    QCOMPARE(int(r.cols()), win);
                    for (int i = 0; i < t; ++i)
                        for (int c = 0; c < win; ++c)
                            if (!(std::abs(r(i, c) - at(i, i - win + 1 + c)) <= tol))
                                QFAIL(qPrintable(where + QStringLiteral(": recent %1 (%2, %3)").arg(win).arg(i).arg(c)));
                }
                const std::vector<float> c = tiles->cells(h, list);
                QCOMPARE(c.size(), list.size());
                for (size_t n = 0; n < list.size(); ++n)
                    if (!(std::abs(c[n] - at(list[n].first, list[n].second)) <= tol))
                        QFAIL(qPrintable(where + QStringLiteral(": cell %1").arg(n)));
                const Mat<float> whole = tiles->wholeRows(h, rows);
                QCOMPARE(int(whole.rows()), int(rows.size()));
                for (size_t n = 0; n < rows.size(); ++n)
                    QVERIFY(largestDifference(Mat<float>(whole.row(Eigen::Index(n))), Mat<float>(w.row(rows[n]))) <= tol);
            }
        }
    }
}

void TestAttentionTiles::rolloutRowEqualsFull_data() { recomputedEqualsFull_data(); }

// Every query's rollout row up to every layer, streamed through the tiles: 1e-12 in float64, 1e-6 in
// float32 (the weights' own bound; the rows' products are summed in float64 either way).
void TestAttentionTiles::rolloutRowEqualsFull()
{
    QFETCH(QString, model);
    QFETCH(bool, float64);
    QFETCH(bool, userMasks);
    Model *m = opened(model);
    QVERIFY(m);
    const std::vector<int> ids = idsOf(cases(model).first().toObject());
    if (float64)
        checkRolloutRows<double>(*m, ids, userMasks, 1e-12);
    else
        checkRolloutRows<float>(*m, ids, userMasks, 1e-6);
}

// Past one block of rows (64): a seeded SmolLM2 shape (grouped-query heads, a sliding window and
// soft-capping on its second layer), rows at the blocks' edges; refusals and cancelling.
void TestAttentionTiles::rolloutRowPastBlocks()
{
    std::unique_ptr<Model> m = seededSmall(50, 30.0);
    QVERIFY(m);
    checkRolloutRows<float>(*m, seededIds(200), false, 1e-6, {0, 63, 64, 65, 127, 128, 150, 199});
    TraceRequest req;
    req.ids = seededIds(100);
    req.observe.weights = false;
    Trace<float> lean;
    QVERIFY(m->trace(req, lean).ok());
    auto tiles = std::make_shared<const AttentionTiles<float>>(lean, 0, AttentionTiles<float>::Source::Recompute);
    RolloutRowRequest<float> rq;
    rq.layer = [&](int l) { return l == 0 ? tiles : nullptr; };
    rq.upTo = 1;
    rq.query = 50;
    std::vector<double> row{42.0};
    Status st = rolloutRow(rq, row);
    QCOMPARE(st.code, StatusCode::Unavailable); // layer 1 handed no tiles
    QVERIFY2(QString::fromStdString(st.message).contains(QStringLiteral("layer 1")), st.message.c_str());
    rq.upTo = 0;
    rq.query = 100;
    QCOMPARE(rolloutRow(rq, row).code, StatusCode::InvalidInput);
    std::atomic<bool> cancel{true};
    rq.query = 50;
    rq.cancel = &cancel;
    QCOMPARE(rolloutRow(rq, row).code, StatusCode::Cancelled);
    QCOMPARE(row, std::vector<double>{42.0}); // untouched
    cancel = false;
    QVERIFY(rolloutRow(rq, row).ok());
    QCOMPARE(int(row.size()), 100);
}

// Norm-weighted reads of a long text: tiles whose weights are multiplied by each key's value norm
// (setKeyWeights with valueNorms) equal normWeighted's full matrices, every head and their mean,
// recomputed (float32 1e-6 of the largest weight, float64 1e-12) and stored; their pooled maps equal
// pooling those matrices; a rollout row through them equals that row of the rollout of the
// norm-weighted weights (attentionRollout makes their rows shares). A factor matrix of the wrong
// shape is refused and changes nothing.
template <typename T>
void checkKeyWeighted(Model &m, int tokens, double tol)
{
    TraceRequest req;
    req.ids = seededIds(tokens);
    Trace<T> tr;
    QVERIFY(m.trace(req, tr).ok());
    const int t = tokens;
    Trace<T> weighted = tr; // the norm-weighted matrices in place of the weights, for the rollout
    std::vector<std::shared_ptr<const AttentionTiles<T>>> layers;
    for (int l = 0; l < tr.numLayers(); ++l) {
        Mat<T> norms;
        QVERIFY(valueNorms(tr, l, norms).ok());
        QCOMPARE(int(norms.rows()), t);
        auto tiles = std::make_shared<AttentionTiles<T>>(tr, l, AttentionTiles<T>::Source::Recompute);
        AttentionTiles<T> stored(tr, l);
        QVERIFY(!tiles->setKeyWeights(Mat<T>::Ones(t + 1, norms.cols())));
        QVERIFY(!tiles->keyWeighted());
        QVERIFY(tiles->setKeyWeights(norms));
        QVERIFY(stored.setKeyWeights(norms));
        QVERIFY(tiles->keyWeighted());
        SequenceResult<T> &ws = weighted.layers[size_t(l)].attention.batch.front();
        for (int h = -1; h < tr.numHeads(); ++h) {
            Mat<T> want;
            QVERIFY(normWeighted(tr, l, h, want).ok());
            const double scale = std::max(1.0, double(want.cwiseAbs().maxCoeff()));
            const QString where = QStringLiteral("layer %1 head %2").arg(l).arg(h);
            const double d = largestDifference(tiles->tile(h, 0, t, 0, t), want) / scale;
            QVERIFY2(d <= tol, qPrintable(where + QStringLiteral(": recomputed off by %1").arg(d)));
            const double ds = largestDifference(stored.tile(h, 0, t, 0, t), want) / scale;
            QVERIFY2(ds <= tol, qPrintable(where + QStringLiteral(": stored off by %1").arg(ds)));
            for (Pooling pool : {Pooling::Max, Pooling::Mean}) {
                const Mat<double> p = poolFull(want.template cast<double>(), 3, t, 0, t - 2, 11, 13, pool);
                const Mat<T> got = tiles->pooled(h, 3, t, 0, t - 2, 11, 13, pool);
                const double dp = largestDifference(Mat<double>(got.template cast<double>()), p) / scale;
                QVERIFY2(dp <= tol, qPrintable(where + QStringLiteral(": pooled off by %1").arg(dp)));
            }
            if (h >= 0)
                ws.weights[size_t(h)] = WeightMatrix<T>(want);
            else
                ws.weightsAvg = WeightMatrix<T>(want);
        }
        layers.push_back(tiles);
    }
    const std::vector<Mat<double>> full = attentionRollout(weighted);
    RolloutRowRequest<T> rq;
    rq.layer = [&](int l) { return layers[size_t(l)]; };
    rq.upTo = tr.numLayers() - 1;
    for (int i : {0, t / 2, t - 1}) {
        rq.query = i;
        std::vector<double> row;
        QVERIFY(rolloutRow(rq, row).ok());
        double d = 0;
        for (int j = 0; j < t; ++j)
            d = std::max(d, std::abs(row[size_t(j)] - full.back()(i, j)));
        QVERIFY2(d <= tol, qPrintable(QStringLiteral("rollout row %1 off by %2").arg(i).arg(d)));
    }
}

void TestAttentionTiles::keyWeightedEqualsNormWeighted()
{
    std::unique_ptr<Model> m = seededSmall(40, 30.0);
    QVERIFY(m);
    checkKeyWeighted<float>(*m, 150, 1e-6);
    checkKeyWeighted<double>(*m, 150, 1e-12);
}

// Row shares (setRowShares) over the key weights: every head's and the mean's weighted rows divided
// by their sums equal makeRowShares of normWeighted's full matrices, recomputed and stored; and every
// head reading with ReadingOptions::normWeighted, on a trace that keeps its weights and on one that
// keeps only q, k and the log-sum-exp, equals that reading of a trace holding those shares (the
// grid's short-text path) — 1e-6 in float32, 1e-12 in float64. A reading stopped reads nothing;
// stopped after some layers (from its progress), those layers' readings are those of a whole run.
template <typename T>
void checkRowShares(Model &m, int tokens, double tol)
{
    TraceRequest req;
    req.ids = seededIds(tokens);
    Trace<T> tr;
    QVERIFY(m.trace(req, tr).ok());
    const int t = tokens;
    Trace<T> shares = tr, bare = tr;
    for (int l = 0; l < tr.numLayers(); ++l) {
        Mat<T> norms;
        QVERIFY(valueNorms(tr, l, norms).ok());
        AttentionTiles<T> tiles(tr, l, AttentionTiles<T>::Source::Recompute), stored(tr, l);
        QVERIFY(tiles.setKeyWeights(norms) && stored.setKeyWeights(norms));
        tiles.setRowShares(true);
        stored.setRowShares(true);
        QVERIFY(tiles.rowShares() && stored.rowShares());
        SequenceResult<T> &ws = shares.layers[size_t(l)].attention.batch.front();
        for (int h = -1; h < tr.numHeads(); ++h) {
            Mat<T> want;
            QVERIFY(normWeighted(tr, l, h, want).ok());
            makeRowShares(want);
            const QString where = QStringLiteral("layer %1 head %2").arg(l).arg(h);
            const double d = largestDifference(tiles.tile(h, 0, t, 0, t), want);
            QVERIFY2(d <= tol, qPrintable(where + QStringLiteral(": recomputed off by %1").arg(d)));
            const double ds = largestDifference(stored.tile(h, 0, t, 0, t), want);
            QVERIFY2(ds <= tol, qPrintable(where + QStringLiteral(": stored off by %1").arg(ds)));
            (h < 0 ? ws.weightsAvg : ws.weights[size_t(h)]) = WeightMatrix<T>(want);
        }
        SequenceResult<T> &b = bare.layers[size_t(l)].attention.batch.front();
        b.weights.clear();
        b.weightsAvg = WeightMatrix<T>();
        // off again: the weighted rows themselves
        tiles.setRowShares(false);
        Mat<T> plain;
        QVERIFY(normWeighted(tr, l, 0, plain).ok());
        QVERIFY(largestDifference(tiles.tile(0, 0, t, 0, t), plain) <= tol * std::max(1.0, double(plain.maxCoeff())));
    }
    ReadingOptions o;
    o.spanBegin = 20;
    o.spanEnd = 31;
    o.window = 16;
    o.entropyRows = 40;
    ReadingOptions w = o;
    w.normWeighted = true;
    for (int r = 0; r <= int(HeadReading::SpanMass); ++r) {
        const HeadReading reading = HeadReading(r);
        const Mat<double> want = headReading(shares, reading, o);
        for (const Trace<T> *from : {&tr, &bare}) {
            const Mat<double> got = headReading(*from, reading, w);
            double d = 0;
            for (Eigen::Index k = 0; k < want.size(); ++k) {
                QCOMPARE(std::isnan(got.data()[k]), std::isnan(want.data()[k]));
                if (!std::isnan(want.data()[k]))
                    d = std::max(d, std::abs(got.data()[k] - want.data()[k]));
            }
            QVERIFY2(d <= tol, qPrintable(QStringLiteral("reading %1 (%2) off by %3").arg(r).arg(from == &tr ? "stored" : "recomputed").arg(d)));
        }
        // not the weights' own readings
        if (reading == HeadReading::SinkMass)
            QVERIFY((headReading(tr, reading, o) - want).cwiseAbs().maxCoeff() > 1e-3);
    }
    // stopped before the first layer: nothing read, every score NaN
    std::atomic<bool> stopped{true};
    w.stop = &stopped;
    const std::vector<Mat<double>> none = headReadings(bare, {HeadReading::SinkMass, HeadReading::Entropy}, w);
    QCOMPARE(int(none.size()), 2);
    for (const Mat<double> &m : none)
        QVERIFY(m.size() > 0 && m.array().isNaN().all());
    // progress after every layer; stopped from it after the first layer: that layer holds the very
    // readings of a whole run, every later one NaN
    const std::vector<HeadReading> two = {HeadReading::FirstToken, HeadReading::SinkMass};
    ReadingOptions all = w;
    all.stop = nullptr;
    std::vector<int> said;
    all.progress = [&](int done, int layers) {
        QCOMPARE(layers, tr.numLayers());
        said.push_back(done);
    };
    const std::vector<Mat<double>> whole = headReadings(bare, two, all);
    QCOMPARE(int(said.size()), tr.numLayers());
    for (int l = 0; l < tr.numLayers(); ++l)
        QCOMPARE(said[size_t(l)], l + 1);
    QVERIFY(tr.numLayers() >= 2);
    std::atomic<bool> stop{false};
    ReadingOptions part = all;
    part.stop = &stop;
    said.clear();
    part.progress = [&](int done, int) {
        said.push_back(done);
        if (done == 1)
            stop.store(true);
    };
    const std::vector<Mat<double>> cut = headReadings(bare, two, part);
    QCOMPARE(said, (std::vector<int>{1}));
    for (size_t k = 0; k < two.size(); ++k)
        for (int l = 0; l < tr.numLayers(); ++l)
            for (int h = 0; h < tr.numHeads(); ++h) {
                if (l < 1)
                    QCOMPARE(cut[k](l, h), whole[k](l, h));
                else
                    QVERIFY(std::isnan(cut[k](l, h)));
            }
    // the row sums themselves stop: row shares stay off
    AttentionTiles<T> tiles(bare, 0);
    Mat<T> norms;
    QVERIFY(valueNorms(bare, 0, norms).ok() && tiles.setKeyWeights(std::move(norms)));
    QVERIFY(!tiles.setRowShares(true, &stopped));
    QVERIFY(!tiles.rowShares());
    stop.store(false);
    QVERIFY(tiles.setRowShares(true, &stop));
    QVERIFY(tiles.rowShares());
}

void TestAttentionTiles::rowSharesEqualMadeShares()
{
    std::unique_ptr<Model> m = seededSmall(40, 30.0);
    QVERIFY(m);
    checkRowShares<float>(*m, 120, 1e-6);
    checkRowShares<double>(*m, 120, 1e-12);
}

QTEST_APPLESS_MAIN(TestAttentionTiles)
#include "tst_attentiontiles.moc"
