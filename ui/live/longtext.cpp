// SPDX-License-Identifier: GPL-3.0-or-later
// Long texts in the window: per-layer AttentionTiles and the "not yet" line (see longtext.h).
#include "live/longtext.h"

#include "attnviz/fileio.h"
#include "attnviz/linear.h"
#include "attnviz/positionwindow.h"
#include "attnviz/reads.h"

#include <QCoreApplication>
#include <QObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>

namespace attnviz::ui {

LongTextTiles::LongTextTiles(std::shared_ptr<const Trace<float>> trace, int cachedLayers, bool normWeighted)
    : m_trace(std::move(trace))
    , m_cachedLayers(std::max(1, cachedLayers))
    , m_normWeighted(normWeighted)
{
    if (m_trace)
        m_layers.resize(m_trace->layers.size());
}

std::shared_ptr<AttentionTiles<float>> LongTextTiles::made(int layer, size_t cacheBytes) const
{
    if (!m_trace || layer < 0 || layer >= m_trace->numLayers() || !AttentionTiles<float>::recomputable(*m_trace, layer))
        return nullptr;
    // the tiles read the trace: the pointer handed out keeps it alive with them
    struct Held {
        std::shared_ptr<const Trace<float>> trace;
        AttentionTiles<float> tiles;
        Held(std::shared_ptr<const Trace<float>> tr, int l, size_t bytes)
            : trace(std::move(tr))
            , tiles(*trace, l, AttentionTiles<float>::Source::Recompute, bytes)
        {
        }
    };
    auto held = std::make_shared<Held>(m_trace, layer, cacheBytes);
    if (!held->tiles.valid())
        return nullptr;
    if (m_normWeighted) { // each key's value norm per head: t x H, one pass over the layer's values
        Mat<float> norms;
        if (!valueNorms(*m_trace, layer, norms) || !held->tiles.setKeyWeights(std::move(norms)))
            return nullptr;
    }
    return std::shared_ptr<AttentionTiles<float>>(held, &held->tiles);
}

std::shared_ptr<const AttentionTiles<float>> LongTextTiles::uncached(int layer) const { return made(layer, 0); }

std::shared_ptr<const AttentionTiles<float>> LongTextTiles::layer(int layer) const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_trace || layer < 0 || layer >= int(m_layers.size()))
        return nullptr;
    std::shared_ptr<AttentionTiles<float>> &t = m_layers[size_t(layer)];
    if (!t)
        t = made(layer, AttentionTiles<float>::kDefaultCacheBytes);
    if (t) {
        m_recent.erase(std::remove(m_recent.begin(), m_recent.end(), layer), m_recent.end());
        m_recent.insert(m_recent.begin(), layer);
        while (int(m_recent.size()) > m_cachedLayers) {
            m_layers[size_t(m_recent.back())]->clearCache(); // a view still reading it computes anew
            m_recent.pop_back();
        }
    }
    return t;
}

std::shared_ptr<const AttentionTiles<float>> longTextTiles(const ComputeSnapshot &s, int layer)
{
    if (!s.longText || !s.tiles || !s.hasResult())
        return nullptr;
    return s.tiles->layer(s.layerIndex(layer));
}

QString longTextPolicy()
{
    return QObject::tr("long text: attention computed where you look");
}

SnapshotPtr longTextNotYet(const SnapshotPtr &s, const QString &view, const QString &needs)
{
    if (!s || !s->longText || !s->hasResult())
        return s;
    auto v = std::make_shared<ComputeSnapshot>(*s);
    v->tiles.reset();
    v->message = QObject::tr("%1 needs %2: not yet for texts past %L3 tokens (this one has %L4)")
                     .arg(view, needs)
                     .arg(s->longTextFrom)
                     .arg(s->tq());
    v->status = Status::error(StatusCode::Unavailable, v->message.toStdString());
    auto t = std::make_shared<Trace<float>>();
    t->tokens = s->trace->tokens;
    t->totalTokens = s->trace->totalTokens;
    v->trace = std::move(t);
    return v;
}

QString longTextWindowNote(const ComputeSnapshot &s)
{
    if (!s.isWindow())
        return {};
    return QObject::tr("positions %L1–%L2 of %L3").arg(s.windowFirst).arg(s.windowFirst + s.tq() - 1).arg(s.windowOf);
}

QString withWindowNote(const ComputeSnapshot &s, QString title)
{
    const QString note = longTextWindowNote(s);
    if (note.isEmpty())
        return title;
    // first, after the view's name: a title cut to the plot's width keeps it
    const QString dash = QStringLiteral(" — ");
    const int end = title.indexOf(QLatin1Char('\n')), named = title.indexOf(dash);
    if (named >= 0 && (end < 0 || named < end))
        return title.insert(named + dash.size(), note + QStringLiteral(" · "));
    return title.insert(end < 0 ? title.size() : end, QStringLiteral(" — ") + note);
}

namespace {

// What the Pipeline tab reads of the window's layers beside the streams: each head's weights over
// the window's own keys, and their mean, from its q, k and each row's log-sum-exp over the whole text
// (AttentionTiles), so each equals the same cell of the text's full matrix (a row sums to 1 only
// over every key of the text); the mask of those cells (causal, sliding window, the text's padded
// keys and masked cells); q and k as projected, before rotation or the q/k norm, where the model
// turns them. Every layer's at once: a window's n x n cells per head are a few megabytes at most.
void addWindowStages(const ComputeSnapshot &s, PositionWindow &w)
{
    const int p0 = w.first, n = w.size();
    Trace<float> &tr = w.trace;
    for (int j : s.trace->paddedKeys)
        if (j >= p0 && j < p0 + n)
            tr.paddedKeys.push_back(j - p0);
    for (const auto &[i, j] : s.trace->maskedCells)
        if (i >= p0 && i < p0 + n && j >= p0 && j < p0 + n)
            tr.maskedCells.emplace_back(i - p0, j - p0);
    const Architecture &arch = s.modelInfo.architecture;
    const bool turned = arch.positions == PositionKind::Rotary || arch.qkNorm;
    for (int l = 0; l < int(tr.layers.size()); ++l) {
        if (!AttentionTiles<float>::recomputable(tr, l))
            continue;
        AttentionTiles<float> tiles(tr, l, AttentionTiles<float>::Source::Recompute, 0);
        if (!tiles.valid())
            continue;
        AttentionResult<float> &a = tr.layers[size_t(l)].attention;
        SequenceResult<float> &r = a.batch.front();
        r.weights.clear();
        for (int h = 0; h < a.numHeads; ++h)
            r.weights.emplace_back(tiles.tile(h, 0, n, 0, n));
        r.weightsAvg = tiles.tile(-1, 0, n, 0, n);
        r.mask = BoolMat::Zero(n, n);
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j)
                r.mask(i, j) = tiles.masked(i, j) ? 1 : 0;
        const std::shared_ptr<const Projections<float>> P = tr.layers[size_t(l)].projections.get();
        const Mat<float> &x = tr.layers[size_t(l)].attentionIn;
        if (turned && P && x.rows() == n) {
            applyLinear(x, P->q, r.qPre);
            Mat<float> k;
            applyLinear(x, P->k, k);
            const int dh = a.dHead, group = a.kvHeads > 0 ? a.numHeads / a.kvHeads : 1;
            r.kPre.resize(n, Eigen::Index(a.numHeads) * dh);
            for (int h = 0; h < a.numHeads && k.cols() >= Eigen::Index(h / group + 1) * dh; ++h)
                r.kPre.middleCols(Eigen::Index(h) * dh, dh) = k.middleCols(Eigen::Index(h / group) * dh, dh);
            if (r.qPre.cols() != r.q.cols() || k.cols() < Eigen::Index(a.numHeads / group) * dh) {
                r.qPre.resize(0, 0);
                r.kPre.resize(0, 0);
            }
        }
    }
    tr.paddedKeys.clear(); // the streams' readers take the window as a text of its own
    tr.maskedCells.clear();
}

// `s` as the window `w` of its positions: the labels and the trace of those rows, no long text's tiles.
SnapshotPtr windowSnapshot(const ComputeSnapshot &s, PositionWindow &&w)
{
    addWindowStages(s, w);
    auto v = std::make_shared<ComputeSnapshot>(s);
    const int p0 = w.first, n = w.size();
    v->longText = false;
    v->tiles.reset();
    v->queryLabels = s.queryLabels.mid(p0, n);
    v->keyLabels = v->queryLabels;
    auto slice = [&](const std::vector<uint8_t> &u) {
        return int(u.size()) >= p0 + n ? std::vector<uint8_t>(u.begin() + p0, u.begin() + p0 + n) : std::vector<uint8_t>();
    };
    v->queryUnknown = slice(s.queryUnknown);
    v->keyUnknown = slice(s.keyUnknown);
    v->totalQueryTokens = v->totalKeyTokens = n;
    v->paddedKeys.clear();
    v->customMask.clear();
    v->cleanTrace.reset();
    v->windowFirst = p0;
    v->windowOf = w.total;
    v->trace = std::make_shared<const Trace<float>>(std::move(w.trace));
    return v;
}

// The position a query selects in a text of t tokens (-1 or past the end: the last).
int positionOf(int query, int t) { return query < 0 || query >= t ? t - 1 : query; }

} // namespace

std::pair<int, int> LongTextWindows::range(int query, int total)
{
    const int q = positionOf(query, total);
    return windowEndingAt(std::min(total - 1, q + 1), kSize, total);
}

SnapshotPtr LongTextWindows::windowFor(const SnapshotPtr &s, int query, bool ask)
{
    if (!s || !s->longText || !s->hasResult())
        return s;
    const int t = s->tq(), q = positionOf(query, t);
    if (m_window && m_source == s) { // the window held serves every row but its last (whose next token it lacks)
        const int first = m_window->windowFirst, end = first + m_window->tq();
        if (q >= first && (q < end - 1 || (q == end - 1 && end == t)))
            return m_window;
    }
    const std::pair<int, int> r = range(q, t);
    if (!ask || (m_asked == s && m_askedRange == r))
        return nullptr; // not asked for, or being computed
    if (m_source == s && !m_failed.isEmpty() && m_askedRange == r)
        return nullptr; // said in pending()
    m_asked = s;
    m_askedRange = r;
    m_failed.clear();
    const quint64 gen = ++m_gen;
    QPointer<LongTextWindows> self(this);
    (void)QtConcurrent::run([s, r, gen, self] {
        PositionWindow w;
        const Status st = s->model ? positionWindow(*s->model, *s->trace, r.first, r.second, w)
                                   : Status::error(StatusCode::Unavailable, "no model");
        SnapshotPtr window = st ? windowSnapshot(*s, std::move(w)) : nullptr;
        const QString why = QString::fromStdString(st.message);
        QMetaObject::invokeMethod(qApp, [self, gen, s, window, why] {
            if (!self || self->m_gen != gen)
                return; // a newer window was asked for
            self->m_asked.reset();
            self->m_source = s;
            self->m_window = window;
            self->m_failed = window ? QString() : why;
            emit self->ready();
        }, Qt::QueuedConnection);
    });
    return nullptr;
}

SnapshotPtr LongTextWindows::pending(const SnapshotPtr &s, int query, const QString &view) const
{
    if (!s || !s->longText || !s->hasResult())
        return s;
    const int t = s->tq();
    const std::pair<int, int> r = range(query, t);
    auto v = std::make_shared<ComputeSnapshot>(*s);
    v->tiles.reset();
    if (m_source == s && !m_failed.isEmpty() && m_askedRange == r)
        v->message = QObject::tr("%1 of positions %L2–%L3 of %L4: %5").arg(view).arg(r.first).arg(r.second - 1).arg(t).arg(m_failed);
    else
        v->message = QObject::tr("%1: computing every layer's stages for positions %L2–%L3 of %L4…")
                         .arg(view)
                         .arg(r.first)
                         .arg(r.second - 1)
                         .arg(t);
    v->status = Status::error(StatusCode::Unavailable, v->message.toStdString());
    auto tr = std::make_shared<Trace<float>>();
    tr->tokens = s->trace->tokens;
    tr->totalTokens = s->trace->totalTokens;
    v->trace = std::move(tr);
    return v;
}

} // namespace attnviz::ui
