// SPDX-License-Identifier: GPL-3.0-or-later
// A lesson as a value: sentences, every control, the table and weight files, the view. Written as a
// small versioned JSON object (a *.attnviz file, README "Session files") and read back section by section.
#pragma once

#include "style/appearance.h"
#include "live/livetypes.h"
#include "views/wordalignment.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <set>
#include <utility>

namespace attnviz::ui {

// Where the window's embedding table came from.
enum class TableKind {
    Unsaved, // set from code (a table no file or name describes): not written, not restored
    Bundled, // the vectors compiled into attnviz
    File,    // a GloVe / word2vec / fastText / .avec file: tablePath
    Seed,    // a seed notebook's typed-in table (seedtables.h): tableName "journey" or "bloem"
};

// The stable ids of the window's tabs, as a session names them.
struct SessionState {
    // input
    QString sentence = QStringLiteral("I must go back to my ship and to my crew"); // = MainWindow::defaultSentence()
    QString keySentence;
    // an encoder-decoder model's target (the sentence is its source; "" = generated, with `beams`),
    // input.target, written only when there is one
    QString target;
    // the beams an empty target is generated with (1 to 4), input.beams; 0: the folder's (not written)
    int beams = 0;
    // an mBART folder's languages (their codes), input.sourceLanguage / input.targetLanguage; "" = the
    // folder's (not written)
    QString sourceLanguage, targetLanguage;
    std::set<int> paddedKeys;
    std::set<std::pair<int, int>> customMask;
    // settings: every field but the loaded weights themselves (projectionsFile, stackWeightsFile say
    // where they come from)
    ComputeSettings settings;
    // table
    TableKind tableKind = TableKind::Bundled;
    QString tablePath; // TableKind::File
    QString tableName; // TableKind::Seed
    // the model: "" = the word-vector attention (table and settings above), "bundled" (attnviz-tiny)
    // or a model folder's path; the layer shown is view.layer
    QString model;
    // weight files ("" = none)
    QString projectionsFile;
    QString stackWeightsFile;
    // view
    QString tab = QStringLiteral("weights"); // a tab's id in views/viewregistry.h
    HeadDisplay headDisplay = HeadDisplay::One;
    int selectedHead = 0;
    int selectedQuery = 0;
    int layer = 0;
    bool showNumbers = true;
    double linesThreshold = 0.01; // the Lines tab: lines fainter than this are not drawn
    bool linesScaleRows = false;  // the Lines tab: each row scaled to its maximum
    bool normWeighted = false;
    bool meanPooling = false;     // a long text's weights map pools each cell by the mean, not the max    // the attention views draw ||a v W_O|| (View menu) instead of the weights
    // an encoder-decoder model's attention the views draw (view.attention: "encoder", "decoder" or
    // "cross"; written only when not the decoder's, the default)
    AttentionKind attention = AttentionKind::Self;
    // a model's head ablations (attn.hook_z of a head at every position, zero or mean) and whether
    // the clean model is shown instead (View ▸ Clean model); written only when there are some
    std::vector<Intervention> ablations;
    bool ablationsShownClean = false;
    // the Patching tab's corrupted prompt, answer and wrong tokens, sweep and metric; written only when
    // a prompt or token is typed. A patch applied from it is not kept: the session holds the clean
    // prompt as its sentence and the edits without the patch (its value is the clean run's activation)
    PatchingSettings patching;
    // the Alignment tab's layer and head (-1: the mean) and the alignment marked on it, per target
    // word its source word; written only when not the defaults (the means, nothing marked)
    AlignmentSettings alignment;
    // the preset whose explanation the Lesson column shows ("" none)
    QString lesson;
    // appearance (application-wide: a lesson brings its theme, colour maps and text size)
    Appearance appearance;
    // the Compare tab's side B (A is the window itself)
    struct CompareB {
        bool present = false; // false: B follows the window's default (a copy of A on first show)
        QString sentence, keySentence;
        ComputeSettings settings;
        QString seedTable; // "" = B uses A's table; "journey" / "bloem" = that seed table
        bool operator==(const CompareB &o) const
        {
            return present == o.present && sentence == o.sentence && keySentence == o.keySentence
                && settings == o.settings && seedTable == o.seedTable;
        }
    } compare;

    bool operator==(const SessionState &o) const;
    bool operator!=(const SessionState &o) const { return !(*this == o); }
};

// 2: "model": "bundled" names attnviz-tiny 2; a version 1 file's "bundled" (attnviz-tiny, the GPT-2)
// is read as "bundled-gpt2".
inline constexpr int kSessionVersion = 2;
inline const QString kSessionFormat = QStringLiteral("attnviz-session");

QJsonObject sessionToJson(const SessionState &s);

// Reads what it can into `s` (which starts as the caller's defaults: a missing section keeps them).
// Every value it could not use, and every key it does not know, is one line in `problems` naming the
// key ("settings.numHeads: -3 is not a head count (1 to 64)", "ignored: settings.fooBar (written by a
// newer attnviz)"). Returns false, with `s` untouched, when the object is not an attnviz session at all
// (wrong or missing "format", a "version" that is not a positive whole number).
bool sessionFromJson(const QJsonObject &json, SessionState &s, QStringList *problems);

// A session's text as a JSON object: the core's JSON checks (checkJsonText, attnviz/fileio.h:
// nesting deeper than 64 levels, a key given twice, numbers beyond float64), then QJsonDocument.
// False with `error`, which does not name the file (the caller does): "settings.numHeads:
// duplicate key (a field may be given once)", "malformed JSON: ...", "not an attnviz session (the
// file holds no JSON object)".
bool parseSessionText(const QByteArray &text, QJsonObject &out, QString &error);

// The largest session file read (README "Files attnviz refuses"): sessions are a few KB.
constexpr quint64 kMaxSessionBytes = 16'000'000;

// The seed tables by the names a session uses ("journey", "bloem"); null for another name.
std::shared_ptr<const EmbeddingTable> seedTableByName(const QString &name);
// The name of a seed table, "" when `t` is not one.
QString seedTableName(const std::shared_ptr<const EmbeddingTable> &t);

} // namespace attnviz::ui
