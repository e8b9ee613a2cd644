// SPDX-License-Identifier: GPL-3.0-or-later
// Head counts that do not divide d_model: the head width and the identity slices (headslices.h).
#include "attnviz/headslices.h"

namespace attnviz {

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

} // namespace attnviz
