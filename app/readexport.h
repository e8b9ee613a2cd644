// SPDX-License-Identifier: GPL-3.0-or-later
// `attnviz export --view lens|dla`: the logit lens and attribution views (attnviz/reads.h), made as
// the window makes them and written headless as a figure or as their own labelled matrix.
#pragma once

#include "files/figureexport.h"
#include "live/livetypes.h"

#include <QString>

namespace attnviz::cli {

// Whether `export --view id` is one of these views.
bool isReadsView(const QString &id);

// Writes view `id` of the snapshot: `position` the selected one (-1: the last), `token` the
// attribution's target (empty: the predicted token). Exit codes as in commands.h: 2 for a model
// without the head the view reads, a token not in the vocabulary or a position out of range.
int exportReadsView(const QString &id, const ui::SnapshotPtr &snapshot, int position, const QString &token, const QString &out,
                    const ui::FigureOptions &figure);

} // namespace attnviz::cli
