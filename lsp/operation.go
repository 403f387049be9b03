package lsp

import (
	"fmt"
	"strings"
)

// Operation is one of the four questions dsh asks a language server.
type Operation int

const (
	// Definition is goToDefinition (textDocument/definition).
	Definition Operation = iota + 1
	// References is findReferences with the declaration included
	// (textDocument/references).
	References
	// Implementation is goToImplementation (textDocument/implementation).
	Implementation
	// Hover is hover (textDocument/hover).
	Hover
)

var opNames = map[Operation][2]string{
	Definition:     {"goToDefinition", "definition"},
	References:     {"findReferences", "references"},
	Implementation: {"goToImplementation", "implementation"},
	Hover:          {"hover", "hover"},
}

// String is the tool's name of the operation: goToDefinition, ….
func (o Operation) String() string {
	if n, ok := opNames[o]; ok {
		return n[0]
	}
	return fmt.Sprintf("Operation(%d)", int(o))
}

// ParseOperation accepts the tool's names (goToDefinition,
// findReferences, goToImplementation, hover) and the CLI's (definition,
// references, implementation, hover).
func ParseOperation(s string) (Operation, error) {
	for op, n := range opNames {
		if s == n[0] || s == n[1] {
			return op, nil
		}
	}
	return 0, fmt.Errorf("operation %q is not one of definition, references, implementation, hover", s)
}

// OperationNames are the CLI's names, in order.
func OperationNames() []string {
	return strings.Fields("definition references implementation hover")
}

func (o Operation) method() string {
	switch o {
	case Definition:
		return "textDocument/definition"
	case References:
		return "textDocument/references"
	case Implementation:
		return "textDocument/implementation"
	}
	return "textDocument/hover"
}
