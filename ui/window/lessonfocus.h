// SPDX-License-Identifier: GPL-3.0-or-later
// What a lesson opens on: the pipeline stage a preset's text talks about, with the cell
// it names explained, outlined and scrolled into view. The other views outline the selected query's
// row themselves; the window applies this once the preset's result has reached the views.
#pragma once

namespace attnviz::ui {

class PipelineView;
struct Preset;

// The pipeline stage a preset names ("scores", "weights", "context", "output"); -1 for none or one
// this configuration does not have.
int lessonStage(const PipelineView &pipeline, const Preset &p);
// Focuses the pipeline on the preset's stage and cell (row = its query, column = its column, 0
// when it names the whole row); false when the preset names none or the stage cannot show it.
bool applyLessonFocus(PipelineView &pipeline, const Preset &p);

} // namespace attnviz::ui
