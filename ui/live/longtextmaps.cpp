// SPDX-License-Identifier: GPL-3.0-or-later
// A long text's pooled maps of several heads, computed off the GUI thread (see longtextmaps.h).
#include "live/longtextmaps.h"

#include <QCoreApplication>
#include <QPointer>
#include <QThreadPool>

namespace attnviz::ui {

LongTextMaps::~LongTextMaps() { cancel(); }

void LongTextMaps::cancel()
{
    if (m_stop)
        m_stop->store(true);
    m_stop.reset();
    ++m_gen;
    m_left = 0;
    m_request = Request();
}

void LongTextMaps::start(Request r)
{
    cancel();
    m_request = r;
    if (!r.tiles || r.heads.empty())
        return;
    const quint64 gen = m_gen;
    m_left = int(r.heads.size());
    m_stop = std::make_shared<std::atomic<bool>>(false);
    QPointer<LongTextMaps> self(this);
    // one job, the heads in turn: each map already uses every core (parallelFor), and a head not
    // begun when the request is replaced costs nothing
    QThreadPool::globalInstance()->start([self, r, gen, stop = m_stop] {
        for (int head : r.heads) {
            if (stop->load())
                return;
            Mat<float> cells = r.tiles->pooled(head, r.region.top(), r.region.bottom() + 1, r.region.left(),
                                               r.region.right() + 1, r.outRows, r.outCols, r.pooling);
            QMetaObject::invokeMethod(
                qApp,
                [self, gen, head, cells = std::move(cells)] {
                    if (!self || self->m_gen != gen)
                        return; // a newer request, or cancelled
                    self->m_left = std::max(0, self->m_left - 1);
                    emit self->ready(head, cells);
                    if (self && self->m_gen == gen && self->m_left == 0)
                        emit self->finished();
                },
                Qt::QueuedConnection);
        }
    });
}

} // namespace attnviz::ui
