// Apply as an undoable step: redo puts the filtered pixels in the document and empties the chain
// (it has been used up); undo brings back the previous pixels and the chain that made the step. For a
// large document both states refer to files (the result one of the document's own, removed with the
// last state that holds it: when this step is dropped from the stack), so switching costs nothing.
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
  const DocumentState& before() const { return before_; }
  const DocumentState& after() const { return after_; }

 private:
  ImageDocument* document_;
  DocumentState before_, after_;
  ChainSettings chain_;
  SetChain set_chain_;
};

}  // namespace tf::gui
