// SPDX-License-Identifier: GPL-3.0-or-later
// The live state behind the window: the text, the controls' settings, the table, the selection
// (layer, head, query), and the compute thread. Every change is debounced (~30 ms), tagged with a
// generation and computed off the UI thread; a snapshot newer than the one shown is published to
// the views, older ones are dropped.
#pragma once

#include "live/livetypes.h"

#include <QObject>
#include <QPointer>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <memory>

namespace attnviz {
class Backend;
}

namespace attnviz::ui {

class ComputeWorker;
class Speculation;

class LiveSession : public QObject {
    Q_OBJECT
public:
    explicit LiveSession(QObject *parent = nullptr);
    ~LiveSession() override;

    void setSentence(const QString &text);
    void setKeySentence(const QString &text);
    // An encoder-decoder model's target (ComputeRequest::target): the sentence is its source; empty:
    // generated from the source (greedy, or setBeams' beams). Other models keep it and do not read it.
    void setTarget(const QString &text);
    const QString &target() const { return m_target; }
    // The beams an empty target is generated with (ComputeRequest::beams, 1 to 4).
    void setBeams(int beams);
    int beams() const { return m_beams; }
    // Which of an encoder-decoder model's attentions the attention views draw (seq2seqView): the
    // encoder's, the decoder's (Self) or the cross-attention. Changing it computes nothing.
    void setAttentionKind(AttentionKind kind);
    AttentionKind attentionKind() const { return m_attentionKind; }
    void setSettings(const ComputeSettings &settings);
    void setTable(std::shared_ptr<const EmbeddingTable> table);
    // A model of its own (File > Open model: a folder): every request traces it, and the word-vector
    // settings and table only label it; null (the default) = the word-vector layer or stack. Once set,
    // only the compute thread traces with it (views make const calls that read a snapshot's trace:
    // Model::nextTokens).
    void setModel(std::shared_ptr<Model> model);
    const std::shared_ptr<Model> &model() const { return m_model; }
    // Replaces the compute backend (CPU today; the GPU backend plugs in here).
    void setBackend(std::unique_ptr<Backend> backend);
    void setDebounceMs(int ms) { m_debounce.setInterval(ms); }
    // Whether a view needs a gated MLP's two products (ComputeRequest::keepMlp). Turned on for a
    // model with a gated MLP whose last request did not keep them, it recomputes; turned off, the
    // next request leaves them out (nothing is recomputed to drop them).
    void setKeepMlp(bool keep);
    bool keepMlp() const { return m_keepMlp; }

    // Edits of a model's forward (the head ablations, Intervention's attn.hook_z of one head): every
    // request carries them (ComputeRequest::edits) and the views recompute. Another model clears them.
    // `shownClean` keeps them but computes the model as it is (View ▸ Clean model).
    void setEdits(const std::vector<Intervention> &edits);
    const std::vector<Intervention> &edits() const { return m_edits; }
    void setEditsShownClean(bool clean);
    bool editsShownClean() const { return m_editsClean; }
    // Pressing it again (the edits back as they were) shows the result the window had before, again.
    // The edits the next press of the ablate action would set (HeadAblations: the selected head
    // ablated the way it was last); empty: none. With a model's result on screen, the request with
    // them is computed in the background (live/speculation.h): at once when they change (another
    // head selected), after the window idled a while when a new result came (typing). A setEdits to
    // them shows it without computing: the finished one, or the one still running, which the press
    // then waits for instead of computing the same trace beside it. Any other change of the request
    // discards it; a long text, a GPU backend or a trace past the memory budget is not speculated on.
    // `pointed`: named by the pointer resting on a head of the grid or its menu (HeadAblations):
    // computed at normal priority, and a press joins it however little it has done (Speculation).
    void setSpeculativeEdits(const std::vector<Intervention> &edits, bool pointed = false);
    const std::vector<Intervention> &speculativeEdits() const { return m_specEdits; }
    Speculation *speculation() const { return m_speculation; }
    // How long the window stays idle after a new result before speculating (ms; 0: at once;
    // negative: never, not even when the speculative edits change).
    void setSpeculationDelayMs(int ms)
    {
        m_specNever = ms < 0;
        m_specDelay.setInterval(std::max(0, ms));
    }
    // A press of the ablate action is waiting for the speculation running (setEdits).
    bool awaitingSpeculation() const { return m_joined != 0; }

    void togglePadding(int keyIndex);
    void toggleCustomCell(int query, int key);
    void clearCustomMask();
    // Replace the whole set (a session being opened); recompute when the mask uses it.
    void setPaddedKeys(const std::set<int> &keys);
    void setCustomMask(const std::set<std::pair<int, int>> &cells);

    // -1 = average of heads.
    void setSelectedHead(int head);
    void setSelectedQuery(int query);
    void setHeadDisplay(HeadDisplay display);
    // The layer the views show (kept across recomputes; views clamp it to the trace's layers). A
    // change the views can see emits layerChanged.
    void setSelectedLayer(int layer);
    int selectedLayer() const { return m_layer; }
    // What a model's trace brings back from a GPU: what the shown views read (ViewRouter::needed).
    // Asking for more than the trace on screen holds computes again.
    void setObserve(const Observe &observe);
    const Observe &observe() const { return m_observe; }

    const QString &sentence() const { return m_sentence; }
    const QString &keySentence() const { return m_keySentence; }
    const ComputeSettings &settings() const { return m_settings; }
    std::shared_ptr<const EmbeddingTable> table() const { return m_table; }
    const std::set<int> &paddedKeys() const { return m_padded; }
    const std::set<std::pair<int, int>> &customMask() const { return m_custom; }
    SnapshotPtr snapshot() const { return m_snapshot; }
    int selectedHead() const { return m_head; }
    int selectedQuery() const { return m_query; }
    HeadDisplay headDisplay() const { return m_display; }
    // Head the single-matrix views show: -1 for the average.
    int shownHead() const { return m_display == HeadDisplay::Average ? -1 : m_head; }
    quint64 generation() const { return m_generation; }
    bool busy() const { return m_busy; }
    // Stops the computation running or waiting (a long text's prefill): the views keep what they
    // show, and computeCancelled follows. Nothing when none is running.
    void cancelCompute();

    // Computes now (skips the debounce); used by export and tests.
    void requestNow();
    // Tests only: each request waits this long on the compute thread before it is computed, so that
    // a cancel lands first however loaded the machine (0: none).
    void holdComputeForTests(int ms);

signals:
    void snapshotChanged(attnviz::ui::SnapshotPtr snapshot);
    void selectionChanged(int head, int query);
    void layerChanged(int layer);
    void headDisplayChanged(attnviz::ui::HeadDisplay display);
    void busyChanged(bool busy, int tokens);
    // The newest request's model trace: `done` of `layers` layers computed.
    void progress(int done, int layers);
    // cancelCompute stopped it: the views still show the snapshot before it.
    void computeCancelled();
    void editsChanged(); // the edits or the clean switch
    void attentionKindChanged(attnviz::AttentionKind kind);

private:
    void schedule();
    void post();
    void onFinished(SnapshotPtr snapshot);
    ComputeRequest request() const; // what post() sends, without its generation
    void speculate();
    void onSpeculated(bool ready);

    QString m_sentence, m_keySentence;
    QString m_target;
    int m_beams = 1;
    AttentionKind m_attentionKind = AttentionKind::Self;
    bool m_encoderDecoder = false; // m_model is an encoder-decoder model
    ComputeSettings m_settings;
    std::shared_ptr<const EmbeddingTable> m_table;
    std::shared_ptr<Model> m_model;
    bool m_gatedModel = false;  // m_model has a gated MLP (its architecture, read when it is set)
    bool m_keepMlp = false;     // a view needs the gated MLP's products
    bool m_postedKeepMlp = false; // the last request posted asked for them
    std::vector<Intervention> m_edits;
    bool m_editsClean = false;
    std::set<int> m_padded;
    std::set<std::pair<int, int>> m_custom;
    int m_head = 0, m_query = 0;
    // The row was chosen since the sentence last changed (a lesson, a comparison or a session sets
    // the text, then its row): the new text's result keeps it. Otherwise the row follows its token
    // across the edit (followedRow in livesession.cpp).
    bool m_queryChosen = false;
    int m_holdMs = 0; // holdComputeForTests
    int m_layer = 0;
    Observe m_observe; // everything until the window says what its views read
    HeadDisplay m_display = HeadDisplay::One;
    quint64 m_generation = 0;
    bool m_busy = false;
    SnapshotPtr m_snapshot;
    QTimer m_debounce;
    QTimer m_busyDelay;
    QThread m_thread;
    QPointer<ComputeWorker> m_worker;
    std::vector<Intervention> m_specEdits;
    bool m_specPointed = false; // m_specEdits named by the pointer (setSpeculativeEdits), also when speculated later
    Speculation *m_speculation = nullptr;
    // The result shown before the last change of the edits, and its request: shown again when the
    // edits go back (restoring an ablated head shows the clean trace the window had). Any other
    // change of the request lets go of it.
    SnapshotPtr m_previous;
    ComputeRequest m_previousRequest;
    QTimer m_specDelay;
    bool m_specNever = false; // setSpeculationDelayMs(negative)
    // The generation a press waiting for the running speculation shows it under (0: none waits).
    quint64 m_joined = 0;
};

} // namespace attnviz::ui
