// SPDX-License-Identifier: GPL-3.0-or-later
// Legibility helpers: the minimum label size, a token axis's label step.
#include "legibility.h"

#include <qcustomplot.h>

#include <algorithm>

namespace attnviz::ui {

int minimumLabelPixels() { return 10; }

int tokenAxisLabelStep(const QCPAxis *axis)
{
    const QVariant v = axis ? axis->property("attnvizLabelStep") : QVariant();
    return v.isValid() ? std::max(1, v.toInt()) : 1;
}

} // namespace attnviz::ui
