// SPDX-License-Identifier: GPL-3.0-or-later
#include "window/lessonfocus.h"

#include "teaching/presets.h"
#include "views/pipelineview.h"

#include <algorithm>

namespace attnviz::ui {

int lessonStage(const PipelineView &pipeline, const Preset &p)
{
    using Kind = PipelineView::StageKind;
    Kind kind;
    if (p.stage == QLatin1String("scores"))
        kind = Kind::RawScores;
    else if (p.stage == QLatin1String("weights"))
        kind = Kind::Weights;
    else if (p.stage == QLatin1String("context"))
        kind = Kind::Context;
    else if (p.stage == QLatin1String("output"))
        kind = Kind::Output;
    else
        return -1;
    return pipeline.indexOf(kind);
}

bool applyLessonFocus(PipelineView &pipeline, const Preset &p)
{
    const int stage = lessonStage(pipeline, p);
    return stage >= 0 && pipeline.focusCell(stage, p.query, std::max(0, p.column));
}

} // namespace attnviz::ui
