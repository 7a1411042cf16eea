//! The judges' chat-quality rubric (appendix B.3.2): the five dimensions a judge scores, each 3,
//! 6 or 9, with their keys in the judge's answer, their weights in the chat score and what each
//! score means. Part of the protocol: the judge's prompt (`crate::prompts`) asks for them, the
//! answer's schema ([`super::schema`]) and parser read them.

/// One chat-quality dimension of the judge's rubric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dimension {
    /// Its key in `chat_quality_dimensions` (e.g. `linguistic_quality`).
    pub key: &'static str,
    /// Its name in the prompt.
    pub name: &'static str,
    /// Its weight in the chat score, percent (the five sum to 100).
    pub weight: u8,
    /// What 9, 6 and 3 points mean, in that order.
    pub rubric: [&'static str; 3],
}

/// The five dimensions, in the paper's order, with their weights and rubrics.
pub const DIMENSIONS: [Dimension; 5] = [
    Dimension {
        key: "linguistic_quality",
        name: "Linguistic Quality",
        weight: 20,
        rubric: [
            "Fluent, professional, grammatically perfect",
            "Generally clear with minor issues",
            "Poor grammar, unclear expression",
        ],
    },
    Dimension {
        key: "anthropomorphism_emotion",
        name: "Anthropomorphism & Emotion",
        weight: 25,
        rubric: [
            "Natural, empathetic, human-like interaction",
            "Somewhat robotic but appropriate tone",
            "Completely mechanical, inappropriate emotion",
        ],
    },
    Dimension {
        key: "content_utility",
        name: "Content Utility",
        weight: 25,
        rubric: [
            "Accurate, comprehensive, directly addresses user needs",
            "Partially relevant, some information missing",
            "Irrelevant or incorrect information",
        ],
    },
    Dimension {
        key: "user_satisfaction",
        name: "User Satisfaction",
        weight: 15,
        rubric: [
            "Fully resolves user concerns, polite and helpful",
            "Partially addresses concerns",
            "Fails to address user needs, potentially frustrating",
        ],
    },
    Dimension {
        key: "instruction_compliance",
        name: "Instruction Compliance",
        weight: 15,
        rubric: [
            "Perfectly follows SOP and action requirements",
            "Minor deviations from instructions",
            "Significant violations of instructions",
        ],
    },
];
