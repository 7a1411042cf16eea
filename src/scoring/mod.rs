//! The SAGE paper's formulas (eqs. 5-9), aggregation and statistics. Pure.
