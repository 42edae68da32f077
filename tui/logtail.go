package tui
