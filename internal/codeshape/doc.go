// Package codeshape holds a test of the production code's shape: no
// function over 90 lines and no type over 30 methods, so that each piece
// stays one a reader can hold in mind. The demo servers and the bench tool
// are not product code and are left out. It holds no code.
package codeshape
