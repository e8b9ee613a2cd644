// SPDX-License-Identifier: GPL-3.0-or-later
// Long texts in the window: a snapshot whose trace keeps no t x t weights (ComputeSnapshot::longText)
// is read through AttentionTiles, one per layer, built on first use and kept with the trace alive
// for as long as any view holds it; the views that read every layer's stages (the lens, attribution,
// the residual stream) get a window of positions around the selected row, recomputed on the pool
// (LongTextWindows); the views that need whole matrices show one line instead.
#pragma once

#include "live/livetypes.h"

#include "attnviz/attentiontiles.h"

#include <QObject>
#include <QString>

#include <memory>
#include <mutex>
#include <vector>

namespace attnviz::ui {

// The per-layer AttentionTiles of one trace (shared by the snapshot and its copies). Only the
// `cachedLayers` layers handed out last keep their caches of recently drawn tiles and maps (each up
// to AttentionTiles::kDefaultCacheBytes): stepping through a 30-layer model's layers would otherwise
// keep 30 caches, ~1.9 GB.
class LongTextTiles {
public:
    static constexpr int kCachedLayers = 2;
    // With `normWeighted` every weight is multiplied by its key's value norm ‖v_j W_O^h‖ (the
    // norm-weighted switch: AttentionTiles::setKeyWeights, reads.h valueNorms).
    explicit LongTextTiles(std::shared_ptr<const Trace<float>> trace, int cachedLayers = kCachedLayers,
                           bool normWeighted = false);
    // Layer `layer`'s tiles (the mean over heads: head -1); null where the layer cannot be
    // recomputed (no q, k or log-sum-exp; norm-weighted, no values). Thread-safe.
    std::shared_ptr<const AttentionTiles<float>> layer(int layer) const;
    // A layer's tiles of its own, without a cache, weighted as layer()'s: what a read that streams
    // many rows (the rollout's row) takes, leaving the views' caches as they are.
    std::shared_ptr<const AttentionTiles<float>> uncached(int layer) const;
    bool normWeighted() const { return m_normWeighted; }

private:
    std::shared_ptr<AttentionTiles<float>> made(int layer, size_t cacheBytes) const;

    std::shared_ptr<const Trace<float>> m_trace;
    int m_cachedLayers;
    bool m_normWeighted;
    mutable std::mutex m_mutex;
    mutable std::vector<std::shared_ptr<AttentionTiles<float>>> m_layers;
    mutable std::vector<int> m_recent; // the layers handed out last, the latest first
};

// The tiles of the snapshot's layer `layer` (clamped like ComputeSnapshot::layer); null where the
// snapshot is not a long text's or the layer cannot be read so.
std::shared_ptr<const AttentionTiles<float>> longTextTiles(const ComputeSnapshot &s, int layer);

// What the window's status says of a long text's trace, in plain words.
QString longTextPolicy();

// The line a view shows for a long text it cannot draw yet: `s` without a result, its message
// "<view> needs <needs>: not yet for texts past N tokens (this one has M)". `s` itself where it is
// not a long text's.
SnapshotPtr longTextNotYet(const SnapshotPtr &s, const QString &view, const QString &needs);

// "positions 31,200–31,263 of 32,723" for a window snapshot; "" otherwise.
QString longTextWindowNote(const ComputeSnapshot &s);
// `title` with that note after the view's name ("Logit lens — positions … · …"): a view names its window.
QString withWindowNote(const ComputeSnapshot &s, QString title);

// The windows of a long text's positions that the stage views read: kSize positions ending just after
// the selected row (so that its next token is in the window), every layer's stages recomputed from
// the trace's keys and values (attnviz/positionwindow.h) on the pool, the newest request winning.
class LongTextWindows : public QObject {
    Q_OBJECT
public:
    static constexpr int kSize = 64;
    using QObject::QObject;
    // The window of `s` (a long text's snapshot) holding position `query` (-1: the last), if computed;
    // otherwise null, and where `ask` it is asked for (ready() follows). `s` itself where it is not a
    // long text's.
    SnapshotPtr windowFor(const SnapshotPtr &s, int query, bool ask = true);
    // The window `windowFor` would compute for `query` of a text of `total` tokens: [first, end).
    static std::pair<int, int> range(int query, int total);
    // The line a view shows while its window is computed, or why there is none.
    SnapshotPtr pending(const SnapshotPtr &s, int query, const QString &view) const;

signals:
    void ready(); // a window asked for is computed: ask windowFor again

private:
    SnapshotPtr m_source, m_window; // the long text's snapshot and its window
    SnapshotPtr m_asked;            // the snapshot of the window being computed
    std::pair<int, int> m_askedRange{0, 0};
    QString m_failed; // why the last window could not be computed ("" where it was)
    quint64 m_gen = 0;
};

} // namespace attnviz::ui
