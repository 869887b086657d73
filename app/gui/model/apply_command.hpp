// Apply as an undoable step: redo puts the filtered pixels in the document and empties the chain
// (it has been used up); undo brings back the previous pixels and the chain that made the step.
#pragma once
#include <QUndoCommand>
#include <functional>

#include "document.hpp"
#include "filter_entry.hpp"

namespace tf::gui {

class ApplyCommand : public QUndoCommand {
 public:
  using SetChain = std::function<void(const ChainSettings&)>;
  ApplyCommand(ImageDocument* document, DocumentState before, DocumentState after, ChainSettings chain,
               SetChain set_chain, const QString& text);
  void redo() override;
  void undo() override;

 private:
  ImageDocument* document_;
  DocumentState before_, after_;
  ChainSettings chain_;
  SetChain set_chain_;
};

}  // namespace tf::gui
