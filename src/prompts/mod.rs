//! Prompt templates rendered from a scenario (appendix B.3.2). Pure.
