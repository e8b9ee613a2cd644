// SPDX-License-Identifier: GPL-3.0-or-later
// Models in the window: opening a folder (now, or on a thread behind a progress dialog), the word
// vectors, a model made in code, a failure said once, and a folder dropped on the window:
// MainWindow's members for them.
#include "mainwindow.h"

#include "controls/controlpanel.h"
#include "controls/inputpanel.h"
#include "files/messagetext.h"
#include "live/livesession.h"
#include "views/compareview.h"
#include "window/headablations.h"
#include "window/modelloader.h"
#include "window/modelmenu.h"
#include "window/viewrouter.h"

#include "attnviz/encoderdecoder.h"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QLabel>
#include <QMimeData>
#include <QUndoStack>
#include <QUrl>

#include <algorithm>

namespace attnviz::ui {

bool MainWindow::openModel(const QString &sourceIn, QString *error)
{
    const QString source = ModelLoader::canonicalSource(sourceIn);
    if (source.isEmpty()) {
        useWordVectors();
        return true;
    }
    std::shared_ptr<Model> model;
    if (!ModelLoader::load(source, model, error))
        return false;
    m_modelLoader->addRecent(source);
    setModelFrom(source, std::move(model));
    return true;
}

void MainWindow::startOpenModel(const QString &source)
{
    if (!m_modelLoader->start(source))
        m_status->setText(tr("A model is being read; wait for it or cancel it first."));
    m_modelMenu->setCurrent(m_modelSource); // the checked entry stays the model in use until it is read
}

void MainWindow::askModelFolder()
{
    const QString dir = m_folderPrompt ? m_folderPrompt() : QString();
    if (!dir.isEmpty())
        startOpenModel(dir);
}

void MainWindow::useWordVectors() { setModelFrom(QString(), nullptr); }

void MainWindow::setModelFrom(const QString &source, std::shared_ptr<Model> model)
{
    m_modelSource = model ? source : QString();
    m_modelInfo = model ? model->info() : ModelInfo();
    m_controls->setModel(model ? &m_modelInfo : nullptr);
    m_controls->setEncoderDecoder(m_modelInfo.architecture.encoderDecoder);
    m_input->setTextFields(!model                                      ? InputPanel::TextFields::SentenceAndKeys
                           : m_modelInfo.architecture.encoderDecoder ? InputPanel::TextFields::SourceAndTarget
                                                                     : InputPanel::TextFields::Sentence);
    if (model && m_modelInfo.architecture.encoderDecoder) { // the folder's num_beams (1 to 4), else greedy
        Seq2SeqGenerationSettings g;
        m_input->setBeams(generationSettings(*model, g).ok() ? std::clamp(g.numBeams, 1, 4) : 1);
    }
    Seq2SeqLanguages languages; // an mBART folder's: the pickers beside the target
    if (model)
        seq2seqLanguages(*model, languages);
    QStringList codes;
    for (const std::string &c : languages.codes)
        codes << QString::fromStdString(c);
    m_input->setLanguages(codes, QString::fromStdString(languages.source), QString::fromStdString(languages.target));
    fitControlsWidth(); // a model hides the word vectors' stack and projections
    compareView()->followModel(model, model ? &m_modelInfo : nullptr);
    m_session->setModel(std::move(model)); // after the controls: the settings it computes with are final
    if (m_session->selectedLayer() >= std::max(1, m_modelInfo.layers))
        m_session->setSelectedLayer(0);
    if (m_session->selectedHead() >= m_controls->settings().numHeads)
        m_session->setSelectedHead(0);
    // a model's own tabs and the stack's, ahead of its first result too (a preset or a session may name them)
    m_views->listAhead(viewScope(m_controls->settings().stack.enabled()));
    m_modelMenu->setCurrent(m_modelSource);
    m_input->setModelTokens(m_session->model() ? ModelLoader::title(m_modelSource) : QString(),
                            QString::fromStdString(m_modelInfo.tokenizer));
    if (m_session->model())
        m_status->setText(tr("Model %1: %2 layers × %3 heads, d_model %4, %5")
                              .arg(ModelLoader::title(m_modelSource))
                              .arg(m_modelInfo.layers)
                              .arg(m_modelInfo.heads)
                              .arg(m_modelInfo.dModel)
                              .arg(QString::fromStdString(m_modelInfo.tokenizer)));
    // another model: the controls it set are its own, not a change to undo
    m_lastSettings = m_controls->settings();
    m_undo->clear();
    m_maskedWords.clear();
    m_ablations->update(); // whether this model can be edited
    updateModified();
}

void MainWindow::modelFailed(const QString &source, const QString &message)
{
    const QString inUse = m_modelSource.isEmpty() ? tr("the word vectors stay in use")
                                                  : tr("%1 stays in use").arg(ModelLoader::title(m_modelSource));
    m_status->setText(tr("Cannot open %1: %2 (%3)").arg(ModelLoader::title(source), shownText(message, 200), inUse));
    if (m_messagePrompt)
        m_messagePrompt(tr("Cannot open the model"), tr("%1\n\nThe model in use keeps working: %2.").arg(shownText(message), inUse));
}

namespace {

// The model folder a drop names: a folder, or a config.json in one; "" when it names neither.
QString droppedModelFolder(const QMimeData *mime)
{
    if (!mime || !mime->hasUrls() || mime->urls().size() != 1 || !mime->urls().front().isLocalFile())
        return {};
    const QFileInfo fi(mime->urls().front().toLocalFile());
    if (fi.isDir() || (fi.isFile() && fi.fileName() == QLatin1String("config.json")))
        return ModelLoader::canonicalSource(fi.absoluteFilePath());
    return {};
}

} // namespace

void MainWindow::dragEnterEvent(QDragEnterEvent *e)
{
    if (!droppedModelFolder(e->mimeData()).isEmpty())
        e->acceptProposedAction();
    else
        QMainWindow::dragEnterEvent(e);
}

void MainWindow::dropEvent(QDropEvent *e)
{
    const QString dir = droppedModelFolder(e->mimeData());
    if (dir.isEmpty()) {
        QMainWindow::dropEvent(e);
        return;
    }
    e->acceptProposedAction();
    startOpenModel(dir);
}

} // namespace attnviz::ui
