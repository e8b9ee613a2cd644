// SPDX-License-Identifier: GPL-3.0-or-later
// Head counts that do not divide d_model: the head width and the identity slices.
#include "headslices.h"

#include <QStringList>

#include <algorithm>

namespace attnviz::ui {

int autoHeadWidth(int dModel, int heads)
{
    if (dModel <= 0 || heads <= 0)
        return 0;
    return (dModel + heads - 1) / heads;
}

std::vector<int> identitySliceWidths(int dModel, int heads)
{
    std::vector<int> w;
    if (dModel <= 0 || heads <= 0)
        return w;
    for (int h = 0; h < heads; ++h)
        w.push_back(dModel / heads + (h < dModel % heads ? 1 : 0));
    return w;
}

Projections<float> identitySliceProjections(int dModel, int heads)
{
    const int dh = autoHeadWidth(dModel, heads);
    Mat<float> s = Mat<float>::Zero(heads * dh, dModel);
    int col = 0;
    const std::vector<int> widths = identitySliceWidths(dModel, heads);
    for (int h = 0; h < heads; ++h)
        for (int r = 0; r < widths[size_t(h)]; ++r)
            s(h * dh + r, col++) = 1.0f;
    Projections<float> p;
    p.q.W = s;
    p.k.W = s;
    p.v.W = s;
    p.o.W = s.transpose();
    return p;
}

QString unequalHeadsNote(int dModel, int heads, int dHead, ProjectionMode mode)
{
    if (dModel <= 0 || heads <= 0 || dModel % heads == 0 || (mode != ProjectionMode::Identity && dHead > 0))
        return {};
    const int dh = autoHeadWidth(dModel, heads);
    if (mode == ProjectionMode::Identity) {
        QStringList w;
        for (int x : identitySliceWidths(dModel, heads))
            w << QString::number(x);
        return QStringLiteral("%1 heads do not divide d_model %2: each head takes its own slice of the embedding "
                              "(%3 columns), padded with zeros to d_head %4; W_o puts the slices back in place.")
            .arg(heads)
            .arg(dModel)
            .arg(w.join(QStringLiteral(", ")))
            .arg(dh);
    }
    return QStringLiteral("%1 heads do not divide d_model %2: d_head = ⌈%2 / %1⌉ = %3 (set d_head to choose "
                          "another width).")
        .arg(heads)
        .arg(dModel)
        .arg(dh);
}

} // namespace attnviz::ui
