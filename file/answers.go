package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
)

// SaveAnswer replaces answers/KEY.json. The rename makes it atomic, so it
// needs no lock: the last writer wins. key must be a valid name
// (fusebox.ValidateName).
func (s *Store) SaveAnswer(_ context.Context, key string, a answers.Answer) error {
	if err := fusebox.ValidateName(key); err != nil {
		return fmt.Errorf("save answer: %w", err)
	}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("save answer %s: %w", key, err)
	}
	if int64(len(b)) >= maxAnswerSize { // LoadAnswer would refuse it
		return fmt.Errorf("save answer %s: %w", key, &tooLarge{int64(len(b)) + 1, maxAnswerSize})
	}
	if err := s.checkSubdir(answersDir, true); err != nil {
		return fmt.Errorf("save answer %s: %w", key, err)
	}
	if err := s.writeAtomic(s.answerPath(key), append(b, '\n')); err != nil {
		return fmt.Errorf("save answer %s: %w", key, err)
	}
	return nil
}

// LoadAnswer reads answers/KEY.json. A damaged answer is moved aside and
// reported missing.
func (s *Store) LoadAnswer(_ context.Context, key string) (answers.Answer, bool, error) {
	if err := fusebox.ValidateName(key); err != nil {
		return answers.Answer{}, false, fmt.Errorf("load answer: %w", err)
	}
	path := s.answerPath(key)
	err := s.checkSubdir(answersDir, false)
	var b []byte
	if err == nil {
		b, err = readFile(path, maxAnswerSize)
	}
	var a answers.Answer
	problem, unusable := "", true
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return answers.Answer{}, false, nil
	case symlinkRefused(err):
		problem = "it is a symlink"
	case refused(err) != "":
		problem = refused(err)
	case errors.Is(err, fs.ErrPermission):
		if problem, _, _ = s.unusable(path, err); problem == "" {
			return answers.Answer{}, false, fmt.Errorf("load answer %s: %w", key, err)
		}
	case err != nil:
		return answers.Answer{}, false, fmt.Errorf("load answer %s: %w", key, err)
	default:
		if err := json.Unmarshal(b, &a); err != nil {
			problem, unusable = describe(b, err), false
		}
	}
	if problem == "" {
		return a, true, nil
	}
	// Two readers may both find the damage; the second rename finds nothing.
	if err := s.moveAside(path, problem, unusable); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return answers.Answer{}, false, fmt.Errorf("load answer %s: %w", key, err)
	}
	return answers.Answer{}, false, nil
}
