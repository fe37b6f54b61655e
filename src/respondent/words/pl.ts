import type { Catalogue } from './en';

/** The respondent page's own words in Polish (see en.ts). */
export const pl: Catalogue = {
  submit: 'Wyślij',
  next: 'Dalej',
  back: 'Wstecz',
  saveLater: 'Zapisz i dokończ później',
  progress: 'Strona {position} z {total}',
  requiredNote: 'Pytania oznaczone {mark} są obowiązkowe.',
  savedAsYouGo: 'Twoje odpowiedzi są na bieżąco zapisywane na tym urządzeniu.',
  problems:
    '{count, plural, one {W odpowiedziach jest # problem} few {W odpowiedziach są # problemy} many {W odpowiedziach jest # problemów} other {W odpowiedziach jest # problemu}}',
  needsAnswer: 'To pytanie wymaga odpowiedzi.',
  yes: 'Tak',
  no: 'Nie',
  thankYou: 'Dziękujemy!',
  thankYouTitle: 'Dziękujemy',
  received: 'Otrzymaliśmy Twoje odpowiedzi na „{title}”.',
  continue: 'Dalej',
  rankTop: 'Wybierz swoją pierwszą {count}: 1 to najlepsza.',
  rankAll: 'Nadaj każdej opcji miejsce: 1 to najlepsza.',
  language: 'Język',
  uploadedFiles: 'Przesłane pliki',
  keepFile: 'Zachowaj {name}',
  anyFile: 'Dowolny typ pliku.',
  acceptedFiles: 'Akceptowane: {types}.',
  fileLimit:
    '{max, plural, one {Do {mb} MB.} few {Do {mb} MB każdy; najwyżej # pliki.} many {Do {mb} MB każdy; najwyżej # plików.} other {Do {mb} MB każdy; najwyżej # pliku.}}',
  leaveEmpty: 'Zostaw to pole puste',
  spamNoScript:
    'Ten formularz sprawdza krótkim obliczeniem w przeglądarce, czy odpowiedzi pochodzą od człowieka; wymaga to JavaScriptu. Bez niego Twoje odpowiedzi czekają na sprawdzenie przez właściciela formularza.',
  turnedSubmit: 'Twoje odpowiedzi kończą formularz na tej stronie: przycisk teraz je wysyła.',
  turnedNext: 'Formularz ma dalszy ciąg po tej stronie: przycisk ma teraz napis Dalej.',
  choose: 'Wybierz…',
  removeFile: 'Usuń',
};
