// SPDX-License-Identifier: GPL-3.0-or-later
// What the user changes by hand, as undo steps: a settings change (recorded, then computed with),
// a chip clicked (padding, or BERT's [MASK] and back) and the text it replaces, a patch from the
// Patching tab applied or cleared: MainWindow's members for them.
#include "mainwindow.h"

#include "controls/controlpanel.h"
#include "controls/sentenceedit.h"
#include "live/fallbackbackend.h"
#include "live/livesession.h"
#include "teaching/lessonpanel.h"
#include "views/heatmapview.h"
#include "views/predictionsview.h"
#include "window/undocommands.h"
#include "window/viewrouter.h"

#include <QTextCursor>
#include <QTextDocument>
#include <QUndoStack>

namespace attnviz::ui {

namespace {

// The controls a settings change touched, as the Controls dock names them ("Temperature"), for the
// undo step's text and for merging a slider's drag into one step.
QString changedControls(const ComputeSettings &a, const ComputeSettings &b)
{
    QStringList names;
    const auto add = [&names](bool changed, const char *name) {
        if (changed)
            names << MainWindow::tr(name);
    };
    add(a.numHeads != b.numHeads, "Number of heads");
    add(a.dHead != b.dHead, "d_head");
    add(a.scaleRule != b.scaleRule, "Scaling");
    add(a.temperature != b.temperature, "Temperature");
    add(a.normalization != b.normalization, "Normalization");
    add(a.mask != b.mask, "Mask");
    add(a.maskMethod != b.maskMethod, "Mask method");
    add(a.projection != b.projection || a.loadedProjections != b.loadedProjections, "Projections");
    add(a.projectionSeed != b.projectionSeed, "Random seed");
    add(a.initScheme != b.initScheme, "Init");
    add(a.drawOrder != b.drawOrder, "Draw order");
    add(a.outWidth != b.outWidth, "W_o");
    add(a.dropout != b.dropout, "Dropout");
    add(a.dropoutSeed != b.dropoutSeed, "Dropout seed");
    add(a.backend != b.backend, "Backend");
    add(!(a.stack == b.stack), "Stack");
    return names.isEmpty() ? MainWindow::tr("controls") : names.join(QStringLiteral(", "));
}

} // namespace

void MainWindow::onSettingsChanged(const ComputeSettings &s)
{
    // one undo step per change made by hand (a preset, a session or an undo sets them too)
    if (!m_undoing && !m_applyingPreset && s != m_lastSettings) {
        const ComputeSettings before = m_lastSettings, after = s;
        const QString what = changedControls(before, after);
        const auto set = [this](const ComputeSettings &to) {
            m_undoing = true;
            m_controls->setSettings(to);
            m_undoing = false;
        };
        m_undo->push(new WindowCommand(tr("Change %1").arg(what), [set, before] { set(before); },
                                       [set, after] { set(after); }, what));
    }
    m_lastSettings = s;
    if (s.backend != m_backendMode) { // made here, on the GUI thread, as a QRhi needs
        m_backendMode = s.backend;
        m_session->setBackend(makeWindowBackend(s.backend.toStdString()));
    }
    m_session->setSettings(s);
    if (!m_applyingPreset) {
        m_lesson->markEdited();
        m_lessonFocus.clear();
    }
    heatmapView()->setCustomMaskEditing(s.mask == MaskChoice::Custom);
    // the stack's and the model's tabs: listed for a trace of several layers (onSnapshot); here
    // ahead of it, so that a session or --tab can name them before the first result
    m_views->listAhead(viewScope(s.stack.enabled()));
    updateModified();
}

void MainWindow::replaceInSentence(int from, int to, const QString &with, const QString &what)
{
    const QString before = m_queryEdit->toPlainText().mid(from, to - from);
    const auto edit = [this](int a, int b, const QString &text) {
        QTextCursor c(m_queryEdit->document());
        c.setPosition(a);
        c.setPosition(b, QTextCursor::KeepAnchor);
        c.insertText(text);
    };
    edit(from, to, with);
    m_undo->push(new WindowCommand(what, [edit, from, with, before] { edit(from, from + int(with.size()), before); },
                                   [edit, from, with, before] { edit(from, from + int(before.size()), with); }));
}

void MainWindow::onTokenClicked(bool keyChips, int index)
{
    const SnapshotPtr s = m_session->snapshot();
    if (s && s->maskedLm() && !keyChips) { // BERT: the clicked token becomes [MASK], and back
        if (!s->trace || index < 0 || index >= int(s->trace->tokens.size()) || s->sentence != m_queryEdit->toPlainText())
            return; // a result of an older text: its byte ranges are not this text's
        const TraceToken &t = s->trace->tokens[size_t(index)];
        const QByteArray bytes = s->sentence.toUtf8();
        if (t.end <= t.begin || t.end > size_t(bytes.size()))
            return;
        // character positions in the editor (the trace counts UTF-8 bytes)
        const int from = int(QString::fromUtf8(bytes.left(qsizetype(t.begin))).size());
        const int to = int(QString::fromUtf8(bytes.left(qsizetype(t.end))).size());
        const QString word = s->sentence.mid(from, to - from);
        if (word == QLatin1String("[MASK]")) {
            if (const auto it = m_maskedWords.constFind(from); it != m_maskedWords.cend()) {
                const QString original = *it;
                m_maskedWords.remove(from);
                replaceInSentence(from, to, original, tr("Unmask “%1”").arg(original));
            }
            return;
        }
        if (PredictionsView::maskedSentence(*s, index).isEmpty())
            return; // an added special token
        m_maskedWords.insert(from, word);
        replaceInSentence(from, to, QStringLiteral("[MASK]"), tr("Mask “%1”").arg(word));
        return;
    }
    const bool cross = s && s->cross;
    if (keyChips != cross)
        return; // in cross-attention only the key sentence's tokens can be padding
    const ComputeSettings before = m_controls->settings();
    const auto toggle = [this, index](const ComputeSettings &st) {
        m_undoing = true;
        m_session->togglePadding(index);
        m_controls->setSettings(st);
        m_undoing = false;
        updateModified();
    };
    ComputeSettings st = before;
    if (st.mask == MaskChoice::None || st.mask == MaskChoice::Custom)
        st.mask = MaskChoice::Padding;
    else if (st.mask == MaskChoice::Causal)
        st.mask = MaskChoice::CausalPadding;
    toggle(st);
    const ComputeSettings after = m_controls->settings();
    m_undo->push(new WindowCommand(tr("Pad token %1").arg(index), [toggle, before] { toggle(before); },
                                   [toggle, after] { toggle(after); }));
}

void MainWindow::applyPatch(const Intervention &edit, const QString &corrupted, const QString &what)
{
    if (!editsRefusal(m_modelInfo, m_session->model() != nullptr).isEmpty())
        return;
    const QString beforeText = m_queryEdit->toPlainText();
    const std::vector<Intervention> before = m_session->edits();
    std::vector<Intervention> to;
    for (const Intervention &e : before)
        if (e.kind != EditKind::Value) // one patch at a time: it replaces the last
            to.push_back(e);
    to.push_back(edit);
    // the text first: the edit's value has the corrupted prompt's token count
    const auto set = [this](const QString &text, const std::vector<Intervention> &edits) {
        if (m_queryEdit->toPlainText() != text)
            setSentence(text);
        m_session->setEdits(edits);
    };
    set(corrupted, to);
    m_undo->push(new WindowCommand(
        what, [set, beforeText, before] { set(beforeText, before); }, [set, corrupted, to] { set(corrupted, to); }));
}

void MainWindow::clearPatch(const QString &clean)
{
    const QString beforeText = m_queryEdit->toPlainText();
    const std::vector<Intervention> before = m_session->edits();
    std::vector<Intervention> to;
    for (const Intervention &e : before)
        if (e.kind != EditKind::Value)
            to.push_back(e);
    if (to == before)
        return;
    const auto set = [this](const QString &text, const std::vector<Intervention> &edits) {
        if (m_queryEdit->toPlainText() != text)
            setSentence(text);
        m_session->setEdits(edits);
    };
    set(clean, to);
    m_undo->push(new WindowCommand(
        tr("Clear the patch"), [set, beforeText, before] { set(beforeText, before); }, [set, clean, to] { set(clean, to); }));
}

} // namespace attnviz::ui
