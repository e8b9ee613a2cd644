// SPDX-License-Identifier: GPL-3.0-or-later
// Long texts in the window: per-layer AttentionTiles and the "not yet" line (see longtext.h).
#include "live/longtext.h"

#include "attnviz/fileio.h"

#include <QObject>

#include <algorithm>

namespace attnviz::ui {

LongTextTiles::LongTextTiles(std::shared_ptr<const Trace<float>> trace, int cachedLayers)
    : m_trace(std::move(trace))
    , m_cachedLayers(std::max(1, cachedLayers))
{
    if (m_trace)
        m_layers.resize(m_trace->layers.size());
}

std::shared_ptr<const AttentionTiles<float>> LongTextTiles::layer(int layer) const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_trace || layer < 0 || layer >= int(m_layers.size()))
        return nullptr;
    std::shared_ptr<AttentionTiles<float>> &t = m_layers[size_t(layer)];
    if (!t && AttentionTiles<float>::recomputable(*m_trace, layer)) {
        // the tiles read the trace: the pointer handed out keeps it alive with them
        struct Held {
            std::shared_ptr<const Trace<float>> trace;
            AttentionTiles<float> tiles;
            Held(std::shared_ptr<const Trace<float>> tr, int l)
                : trace(std::move(tr))
                , tiles(*trace, l, AttentionTiles<float>::Source::Recompute)
            {
            }
        };
        auto held = std::make_shared<Held>(m_trace, layer);
        if (held->tiles.valid())
            t = std::shared_ptr<AttentionTiles<float>>(held, &held->tiles);
    }
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

} // namespace attnviz::ui
