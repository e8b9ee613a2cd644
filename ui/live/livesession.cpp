// SPDX-License-Identifier: GPL-3.0-or-later
#include "live/livesession.h"

#include "live/computeworker.h"
#include "live/livecompute.h"
#include "live/speculation.h"
#include "live/stackcompute.h"

#include "attnviz/backend.h"
#include "attnviz/memorybudget.h"

#include <algorithm>

namespace attnviz::ui {

namespace {

// The selected row across an edited text, by the tokens on either side of the edit: a row before
// the edit keeps its index, a row after it follows its token (a word typed before it shifts it), a
// row whose own token changed keeps its index (typing at the row's word). A text with most of both
// the old and the new changed (pasted, loaded) starts again at row 0, as a first text does.
int followedRow(const QStringList &before, const QStringList &after, int row)
{
    if (before == after)
        return row;
    const int nb = int(before.size()), na = int(after.size());
    int p = 0;
    while (p < nb && p < na && before[p] == after[p])
        ++p;
    int s = 0;
    while (s < nb - p && s < na - p && before[nb - 1 - s] == after[na - 1 - s])
        ++s;
    if (row < p)
        return row;
    if (row >= nb - s)
        return row + na - nb;
    if (2 * (nb - p - s) > nb && 2 * (na - p - s) > na)
        return 0;
    return row;
}

} // namespace

LiveSession::LiveSession(QObject *parent)
    : QObject(parent)
{
    qRegisterMetaType<attnviz::ui::SnapshotPtr>();
    m_debounce.setSingleShot(true);
    m_debounce.setInterval(30);
    connect(&m_debounce, &QTimer::timeout, this, &LiveSession::post);
    // Progress appears only when an update takes noticeably long.
    m_busyDelay.setSingleShot(true);
    m_busyDelay.setInterval(150);
    connect(&m_busyDelay, &QTimer::timeout, this, [this] {
        if (m_busy)
            emit busyChanged(true, int(m_sentence.size() / 5));
    });
    m_speculation = new Speculation(this);
    // a pause long enough that typing does not start one between two keystrokes
    m_specDelay.setSingleShot(true);
    m_specDelay.setInterval(250);
    connect(&m_specDelay, &QTimer::timeout, this, &LiveSession::speculate);
    connect(m_speculation, &Speculation::finished, this, &LiveSession::onSpeculated);
    m_thread.setObjectName(QStringLiteral("attnviz-compute"));
    m_thread.start();
    setBackend(std::make_unique<CpuBackend>());
}

LiveSession::~LiveSession()
{
    if (m_worker)
        m_worker->deleteLater();
    m_thread.quit();
    m_thread.wait();
}

void LiveSession::setBackend(std::unique_ptr<Backend> backend)
{
    if (m_worker)
        m_worker->deleteLater(); // runs in the compute thread after any current work
    auto *worker = new ComputeWorker(std::move(backend));
    worker->moveToThread(&m_thread);
    connect(worker, &ComputeWorker::finished, this, &LiveSession::onFinished, Qt::QueuedConnection);
    connect(worker, &ComputeWorker::progressed, this, [this](quint64 generation, int done, int layers) {
        if (generation == m_generation && m_busy)
            emit progress(done, layers);
    }, Qt::QueuedConnection);
    worker->setHoldForTests(m_holdMs);
    m_worker = worker;
    schedule();
}

void LiveSession::holdComputeForTests(int ms)
{
    m_holdMs = std::max(0, ms);
    if (m_worker)
        m_worker->setHoldForTests(m_holdMs);
}

void LiveSession::setSentence(const QString &text)
{
    if (text == m_sentence)
        return;
    m_sentence = text;
    m_queryChosen = false;
    schedule();
}

void LiveSession::setKeySentence(const QString &text)
{
    if (text == m_keySentence)
        return;
    m_keySentence = text;
    m_padded.clear();
    m_custom.clear();
    schedule();
}

void LiveSession::setTarget(const QString &text)
{
    if (text == m_target)
        return;
    m_target = text;
    if (m_encoderDecoder)
        schedule();
}

void LiveSession::setBeams(int beams)
{
    beams = std::clamp(beams, 1, 4);
    if (beams == m_beams)
        return;
    m_beams = beams;
    if (m_encoderDecoder && m_target.trimmed().isEmpty())
        schedule();
}

void LiveSession::setAttentionKind(AttentionKind kind)
{
    if (kind == m_attentionKind)
        return;
    m_attentionKind = kind;
    emit attentionKindChanged(kind);
}

void LiveSession::setSettings(const ComputeSettings &settings)
{
    if (settings == m_settings)
        return;
    m_settings = settings;
    if (m_head >= settings.numHeads)
        setSelectedHead(0);
    schedule();
}

void LiveSession::setTable(std::shared_ptr<const EmbeddingTable> table)
{
    m_table = std::move(table);
    schedule();
}

void LiveSession::setModel(std::shared_ptr<Model> model)
{
    m_model = std::move(model);
    m_gatedModel = m_model && m_model->info().architecture.gatedMlp;
    m_encoderDecoder = m_model && m_model->info().architecture.encoderDecoder;
    if (!m_edits.empty() || m_editsClean) { // edits name another model's layers and heads
        m_edits.clear();
        m_editsClean = false;
        emit editsChanged();
    }
    schedule();
}

void LiveSession::setEdits(const std::vector<Intervention> &edits)
{
    if (edits == m_edits)
        return;
    // the result on screen, current: shown again should the edits come back to these (a toggle)
    const bool current = m_snapshot && m_snapshot->hasResult() && m_snapshot->generation == m_generation && !m_busy &&
                         !m_debounce.isActive();
    SnapshotPtr before = current ? m_snapshot : nullptr;
    ComputeRequest beforeRequest = current ? request() : ComputeRequest();
    m_edits = edits;
    if (m_edits.empty())
        m_editsClean = false; // nothing kept aside: the switch goes back to the edited (= clean) model
    // the speculated request, computed while the window idled, or the one shown before this one's
    // edits: shown as a computed one would be (taken before editsChanged, whose listeners name the
    // next speculation)
    std::shared_ptr<ComputeSnapshot> ready;
    if (current) {
        const ComputeRequest now = request();
        if (m_previous && Speculation::sameRequest(now, m_previousRequest))
            ready = std::make_shared<ComputeSnapshot>(*m_previous);
        else if (m_speculation->ready() && (ready = m_speculation->take(now)) && m_worker)
            // the compute thread continues from it (typing next computes the new rows only); it writes
            // into a trace only once no snapshot holds it
            m_worker->adopt(m_model.get(), std::const_pointer_cast<Trace<float>>(ready->trace));
    }
    if (ready) {
        m_previous = std::move(before);
        m_previousRequest = std::move(beforeRequest);
        m_specDelay.stop();
        ready->generation = ++m_generation;
        m_postedKeepMlp = m_keepMlp && m_gatedModel;
        m_busy = true;
        QMetaObject::invokeMethod(this, [this, ready] { onFinished(ready); }, Qt::QueuedConnection);
        emit editsChanged();
        return;
    }
    if (current && m_speculation->joinable() && m_speculation->covers(request())) {
        // the press's trace is half computed or more, or pointed at (normal priority): waited for
        // (onSpeculated), not computed again beside it (an idle one only begun is discarded by
        // schedule(): the press computes it)
        m_previous = std::move(before);
        m_previousRequest = std::move(beforeRequest);
        m_specDelay.stop();
        m_joined = ++m_generation;
        m_speculation->hurry();
        m_postedKeepMlp = m_keepMlp && m_gatedModel;
        m_busy = true;
        if (!m_busyDelay.isActive())
            m_busyDelay.start();
        emit editsChanged();
        return;
    }
    emit editsChanged();
    schedule();
    // schedule() let go of the one shown before: kept for the edits it was computed with
    m_previous = std::move(before);
    m_previousRequest = std::move(beforeRequest);
}

void LiveSession::setSpeculativeEdits(const std::vector<Intervention> &edits, bool pointed)
{
    if (edits == m_specEdits)
        return;
    m_specEdits = edits;
    m_specPointed = pointed;
    if (m_joined) // a press waits for the running one: its edits are the session's now
        return;
    m_speculation->discard();
    m_specDelay.stop();
    // another head selected over a result already on screen: at once (a press soon after finds it
    // computed, or joins it)
    if (!m_specEdits.empty() && !m_busy && !m_specNever)
        speculate();
}

void LiveSession::onSpeculated(bool ready)
{
    if (!m_joined)
        return;
    const quint64 generation = m_joined;
    m_joined = 0;
    if (generation != m_generation) // a newer request was posted since (it discarded the speculation)
        return;
    std::shared_ptr<ComputeSnapshot> snapshot = ready ? m_speculation->take(request()) : nullptr;
    if (!snapshot) { // failed (out of memory) or not the request after all: computed as usual
        post();
        return;
    }
    if (m_worker)
        m_worker->adopt(m_model.get(), std::const_pointer_cast<Trace<float>>(snapshot->trace));
    snapshot->generation = generation;
    onFinished(snapshot);
}

void LiveSession::speculate()
{
    if (m_specNever || m_joined || m_specEdits.empty() || m_specEdits == m_edits || !m_model || m_encoderDecoder ||
        !m_worker || m_busy || m_debounce.isActive() || m_editsClean || m_settings.backend != QLatin1String("cpu"))
        return;
    const SnapshotPtr s = m_snapshot;
    if (!s || !s->hasResult() || !s->fromModel() || s->longText || s->generation != m_generation ||
        !editsRefusal(s->modelInfo, true).isEmpty())
        return;
    ComputeRequest r = request();
    r.edits = m_specEdits;
    if (m_speculation->covers(r)) // computed or computing already: nothing changed since
        return;
    // the edited trace and the clean one beside it, on top of the two the window keeps: within the
    // window's budget for one trace, else the press computes it as before
    const ModelInfo &info = s->modelInfo;
    if (2 * traceBytes(info, int(s->trace->tokens.size()), sizeof(float), false, 0, r.keepMlp) > windowTraceBudget())
        return;
    // the clean trace beside an edited result the window holds (on screen, or the one a toggle shows
    // again): the speculated clean trace copies its rows instead of tracing the text once more
    std::shared_ptr<const Trace<float>> clean = s->cleanTrace;
    if (!clean && m_previous)
        clean = m_previous->cleanTrace;
    m_speculation->start(std::move(r), s->trace->edits.empty() ? s->trace : nullptr, s->induction, s->inductionProblem,
                         std::move(clean), m_specPointed);
}

void LiveSession::setEditsShownClean(bool clean)
{
    clean = clean && !m_edits.empty();
    if (clean == m_editsClean)
        return;
    m_editsClean = clean;
    emit editsChanged();
    schedule();
}

void LiveSession::setKeepMlp(bool keep)
{
    if (keep == m_keepMlp)
        return;
    m_keepMlp = keep;
    if (keep && m_gatedModel && !m_postedKeepMlp)
        schedule();
}

void LiveSession::togglePadding(int keyIndex)
{
    if (!m_padded.erase(keyIndex))
        m_padded.insert(keyIndex);
    if (m_settings.mask == MaskChoice::Padding || m_settings.mask == MaskChoice::CausalPadding)
        schedule();
}

void LiveSession::toggleCustomCell(int query, int key)
{
    const auto cell = std::make_pair(query, key);
    if (!m_custom.erase(cell))
        m_custom.insert(cell);
    if (m_settings.mask == MaskChoice::Custom)
        schedule();
}

void LiveSession::clearCustomMask()
{
    m_custom.clear();
    if (m_settings.mask == MaskChoice::Custom)
        schedule();
}

void LiveSession::setPaddedKeys(const std::set<int> &keys)
{
    if (keys == m_padded)
        return;
    m_padded = keys;
    if (m_settings.mask == MaskChoice::Padding || m_settings.mask == MaskChoice::CausalPadding)
        schedule();
}

void LiveSession::setCustomMask(const std::set<std::pair<int, int>> &cells)
{
    if (cells == m_custom)
        return;
    m_custom = cells;
    if (m_settings.mask == MaskChoice::Custom)
        schedule();
}

void LiveSession::setSelectedHead(int head)
{
    if (head == m_head && (head >= 0 || m_display == HeadDisplay::Average))
        return;
    if (head < 0) {
        m_display = HeadDisplay::Average;
        emit headDisplayChanged(m_display);
    } else {
        m_head = head;
        if (m_display == HeadDisplay::Average) {
            m_display = HeadDisplay::One;
            emit headDisplayChanged(m_display);
        }
    }
    emit selectionChanged(shownHead(), m_query);
}

void LiveSession::setSelectedQuery(int query)
{
    m_queryChosen = true; // for the text now set, even where it is the row already selected
    if (query == m_query)
        return;
    m_query = query;
    emit selectionChanged(shownHead(), m_query);
}

void LiveSession::setHeadDisplay(HeadDisplay display)
{
    if (display == m_display)
        return;
    m_display = display;
    emit headDisplayChanged(display);
    emit selectionChanged(shownHead(), m_query);
}

void LiveSession::setSelectedLayer(int layer)
{
    layer = std::max(0, layer);
    if (layer == m_layer)
        return;
    const int shownBefore = m_snapshot ? m_snapshot->layerIndex(m_layer) : 0;
    m_layer = layer;
    // the views follow when the layer they show changes (a trace of one layer shows layer 0 anyway)
    if (m_snapshot && m_snapshot->layerIndex(m_layer) != shownBefore)
        emit layerChanged(m_layer);
}

void LiveSession::setObserve(const Observe &observe)
{
    if (observe == m_observe)
        return;
    m_observe = observe;
    // a long text's trace holds every layer's q and k, all that the views read of it
    if (m_model && m_snapshot && m_snapshot->hasResult() && m_snapshot->fromModel() && !m_snapshot->longText &&
        !m_snapshot->trace->observed.covers(observe))
        requestNow();
}

void LiveSession::schedule()
{
    m_previous.reset();
    m_speculation->discard(); // newest wins: the request it speculated on is no longer the next one
    m_joined = 0;
    m_specDelay.stop();
    ++m_generation;
    if (m_debounce.interval() <= 0)
        post();
    else
        m_debounce.start();
}

void LiveSession::requestNow()
{
    m_previous.reset();
    m_debounce.stop();
    post();
}

ComputeRequest LiveSession::request() const
{
    ComputeRequest r;
    r.sentence = m_sentence;
    r.keySentence = m_keySentence;
    r.settings = m_settings;
    r.table = m_table;
    r.paddedKeys = m_padded;
    r.customMask = m_custom;
    r.model = m_model;
    r.observe = m_observe;
    r.longTexts = true;
    r.keepMlp = m_keepMlp && m_gatedModel;
    r.edits = m_edits;
    r.editsShownClean = m_editsClean;
    if (m_encoderDecoder) {
        r.target = m_target;
        r.beams = m_beams;
    }
    return r;
}

void LiveSession::post()
{
    if (!m_worker)
        return;
    m_speculation->discard();
    m_joined = 0;
    m_specDelay.stop();
    ComputeRequest r = request();
    r.generation = ++m_generation;
    m_postedKeepMlp = r.keepMlp;
    m_busy = true;
    if (!m_busyDelay.isActive())
        m_busyDelay.start();
    m_worker->post(std::move(r));
}

void LiveSession::cancelCompute()
{
    if (!m_busy || !m_worker)
        return;
    m_debounce.stop();
    if (m_joined) { // the speculation a press waits for: stopped, the views keep what they show
        m_speculation->discard();
        m_joined = 0;
        m_busy = false;
        m_busyDelay.stop();
        emit busyChanged(false, m_snapshot && m_snapshot->hasResult() ? m_snapshot->tq() : 0);
        emit computeCancelled();
        return;
    }
    m_worker->cancel(m_generation);
}

void LiveSession::onFinished(SnapshotPtr snapshot)
{
    // stopped by cancelCompute: what is on screen stays; a newer request computes as usual
    if (snapshot && snapshot->status.code == StatusCode::Cancelled) {
        if (snapshot->generation == m_generation && m_busy) {
            m_busy = false;
            m_busyDelay.stop();
            emit busyChanged(false, m_snapshot && m_snapshot->hasResult() ? m_snapshot->tq() : 0);
            emit computeCancelled();
        }
        return;
    }
    // Stale = older than what the views already show. A result that is not the newest request is
    // still shown when it is newer than the current one, so that continuous typing with a slow
    // compute keeps the views moving instead of starving them.
    if (!snapshot || (m_snapshot && snapshot->generation <= m_snapshot->generation))
        return;
    m_busy = snapshot->generation != m_generation;
    if (!m_busy) {
        m_busyDelay.stop();
        emit busyChanged(false, snapshot->tq());
    }
    if (!m_queryChosen && m_snapshot && m_snapshot->hasResult() && snapshot->hasResult())
        m_query = followedRow(m_snapshot->queryLabels, snapshot->queryLabels, m_query);
    m_snapshot = std::move(snapshot);
    if (m_snapshot->hasResult() && m_query >= m_snapshot->tq())
        m_query = std::max(0, m_snapshot->tq() - 1);
    emit snapshotChanged(m_snapshot);
    if (!m_busy && !m_specEdits.empty() && !m_specNever)
        m_specDelay.start();
}

} // namespace attnviz::ui
