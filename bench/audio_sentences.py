"""Known English sentences for the local speech round trip (eSpeak NG -> recogniser).

Everyday sentences of the kind a voice agent hears: numbers spelled out, names of places,
questions and commands. Used by `bench/audio.py` for the word error rate.
"""

SENTENCES: tuple[str, ...] = (
    "The quick brown fox jumps over the lazy dog.",
    "Please book a table for two at seven tonight.",
    "What is the weather like in London tomorrow?",
    "Turn off the lights in the kitchen.",
    "My flight leaves from gate twelve at noon.",
    "Can you remind me to call my mother on Sunday?",
    "The meeting has been moved to Thursday afternoon.",
    "I would like to order a large pizza with mushrooms.",
    "How many people live in the city of Paris?",
    "Send an email to the sales team about the new prices.",
    "The train to Boston is running twenty minutes late.",
    "Play some quiet music while I read my book.",
    "Our office opens at nine in the morning.",
    "She bought three apples and a loaf of bread.",
    "Please transfer one hundred dollars to my savings account.",
    "The doctor will see you in a few minutes.",
    "Set a timer for fifteen minutes.",
    "The children played in the park all afternoon.",
    "Where is the nearest train station?",
    "I need a taxi to the airport in one hour.",
    "The water in the lake was cold and clear.",
    "Thank you for calling, how can I help you today?",
)


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word-level edit distance over the reference length (words lower-cased, no punctuation)."""
    ref, hyp = normalise(reference), normalise(hypothesis)
    previous = list(range(len(hyp) + 1))
    for i, word in enumerate(ref, 1):
        current = [i]
        for j, other in enumerate(hyp, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != other))
            )
        previous = current
    return previous[-1] / max(1, len(ref))


def normalise(text: str) -> list[str]:
    kept = "".join(ch.lower() if ch.isalnum() or ch == "'" else " " for ch in text)
    return kept.split()
