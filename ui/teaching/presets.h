// SPDX-License-Identifier: GPL-3.0-or-later
// One named preset per demonstration in the seed notebooks: it sets every control, the sentence,
// the table and the view, and carries the paragraph that explains what to look at. The lessons on the
// bundled trained model (attnviz-tiny) are presets too: they open the model instead of a
// word-vector table and select a layer as well.
#pragma once

#include "live/livetypes.h"

#include <QRect>
#include <QString>

#include <utility>
#include <vector>

namespace attnviz::ui {

enum class PresetTable { Bundled, Journey, Bloem };

struct Preset {
    QString id;          // stable: sessions and tests name presets by it
    QString title;       // menu text
    QString seed;        // "001", "003" …: the notebook it comes from; "tiny", "tiny2", "dates": a lesson on a bundled model
    QString explanation; // one paragraph, shown beside the views
    QString sentence, keySentence;
    // An encoder-decoder model's: the target typed in the Target field (the decoder's text; empty: generated),
    // and the attention the window shows (Encoder, Decoder = Self, Cross).
    QString target;
    AttentionKind attention = AttentionKind::Self;
    PresetTable table = PresetTable::Bundled; // word vectors only
    ComputeSettings settings;                 // word vectors only: a model sets its own
    QString model; // "" = the word vectors of the seed notebooks; "bundled" = attnviz-tiny 2,
                   // "bundled-gpt2" = attnviz-tiny, "bundled-dates" = attnviz-dates (bundledmodel.h)
    int layer = 0; // the layer selected (a model's; the word vectors have one)
    HeadDisplay display = HeadDisplay::One;
    int head = 0;
    int query = 0;
    QString view; // the tab to show, by its id ("weights", "pipeline" …: views/viewregistry.h)
    // What the text talks about: on the pipeline, the stage ("scores", "weights",
    // "context", "output") whose cell (query, column) the window outlines and explains; elsewhere the
    // selected query's row is outlined. Column -1: the row.
    QString stage;
    int column = -1;
    // On the weights heatmap: the region the lesson opens zoomed to (x: keys, y: queries), where its
    // cells are large enough for the numbers the text quotes (presenting too); empty: the whole text.
    QRect zoom;
    // Numbers the text names that are settings, not values any view draws (the dropout rate).
    QStringList settingNumbers;
    // The weights' colour scale: fixed 0–1 where the text compares weights with 1 or with another
    // lesson's (near-uniform rows look near-uniform); false: 0 to the largest weight, where the text
    // reads the pattern within the sentence ("most to itself, then to crew") and the fixed scale
    // would draw weights ≤ 0.23 as one dark wall.
    bool fixedScale = true;
    // Model lessons: heads (layer, head) zero-ablated when the lesson opens (the window's edits; a lesson
    // without any clears them).
    std::vector<std::pair<int, int>> ablate;
    // Model lessons: the Patching tab's prompts, tokens, sweep and receiver; runPatching: its sweep run
    // once the lesson's text has its result.
    PatchingSettings patching;
    bool runPatching = false;
};

// The decimal numbers the explanation quotes ("0.9544", "−2.1985", "1.0"), as written, less the
// preset's settingNumbers: what must be in view when the preset opens.
QStringList quotedNumbers(const Preset &p);

// Every preset, in teaching order (the journey first).
const std::vector<Preset> &presets();
// nullptr when no preset has this id.
const Preset *findPreset(const QString &id);

// The seeds of the lessons on the bundled models (they come last in presets()): attnviz-tiny (GPT-2),
// attnviz-tiny 2 (a Llama) and attnviz-dates (a T5: cross-attention).
inline const QString kTinySeed = QStringLiteral("tiny");
inline const QString kTiny2Seed = QStringLiteral("tiny2");
inline const QString kDatesSeed = QStringLiteral("dates");

// The seed notebook's short name ("seed 001: a simple self-attention mechanism").
QString seedTitle(const QString &seed);

} // namespace attnviz::ui
