// SPDX-License-Identifier: GPL-3.0-or-later
// A long text's pooled maps of several heads of one layer (AttentionTiles::pooled: each output cell
// the max or the mean of the weights it covers), computed one head after another on a pool thread,
// each head's map itself in parallel over the core's pool, and handed back on the GUI thread as it
// is ready: the Heads tab fills panel by panel. A newer request or cancel() stops the heads not yet
// begun and drops any result of the request before.
#pragma once

#include "attnviz/attentiontiles.h"

#include <QObject>
#include <QRect>

#include <atomic>
#include <memory>
#include <vector>

namespace attnviz::ui {

class LongTextMaps : public QObject {
    Q_OBJECT
public:
    struct Request {
        std::shared_ptr<const AttentionTiles<float>> tiles; // held alive while the maps are computed
        std::vector<int> heads;                             // in the order computed; -1: the mean over heads
        QRect region;                                       // x keys, y queries, in cells
        int outRows = 1, outCols = 1;
        Pooling pooling = Pooling::Max;
        bool operator==(const Request &o) const
        {
            return tiles == o.tiles && heads == o.heads && region == o.region && outRows == o.outRows
                && outCols == o.outCols && pooling == o.pooling;
        }
    };

    using QObject::QObject;
    ~LongTextMaps() override;

    // Starts computing `r`'s maps (the request before cancelled); ready() follows for each head.
    void start(Request r);
    // Stops the heads not yet begun; nothing more of the request is handed back.
    void cancel();
    // Whether maps of the last request are still to come.
    bool running() const { return m_left > 0; }
    // The last request started (tiles null where none or cancelled).
    const Request &request() const { return m_request; }

signals:
    // Head `head`'s map of the request started last: outRows x outCols cells.
    void ready(int head, const attnviz::Mat<float> &cells);
    // Every head of the request started last is handed back.
    void finished();

private:
    Request m_request;
    std::shared_ptr<std::atomic<bool>> m_stop; // the running request's
    quint64 m_gen = 0;
    int m_left = 0;
};

} // namespace attnviz::ui
