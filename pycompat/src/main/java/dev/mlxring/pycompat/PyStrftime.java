package dev.mlxring.pycompat;

import java.time.ZonedDateTime;

/**
 * Python's {@code strftime} for {@code strftime_now(format)}: the subset of C strftime directives that
 * chat templates use, in the C/English locale; any other directive raises.
 */
public final class PyStrftime {
    private static final String[] DAYS = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
    private static final String[] MONTHS = {
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December"
    };

    private PyStrftime() {}

    /**
     * {@code t.strftime(fmt)}.
     *
     * @throws PyError for a directive outside the subset
     */
    public static String format(String fmt, ZonedDateTime t) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < fmt.length(); i++) {
            char c = fmt.charAt(i);
            if (c != '%' || i + 1 >= fmt.length()) {
                b.append(c);
                continue;
            }
            char d = fmt.charAt(++i);
            String day = DAYS[t.getDayOfWeek().getValue() - 1];
            String month = MONTHS[t.getMonthValue() - 1];
            switch (d) {
                case 'Y' -> b.append(t.getYear());
                case 'y' -> b.append(String.format("%02d", t.getYear() % 100));
                case 'm' -> b.append(String.format("%02d", t.getMonthValue()));
                case 'd' -> b.append(String.format("%02d", t.getDayOfMonth()));
                case 'e' -> b.append(String.format("%2d", t.getDayOfMonth()));
                case 'H' -> b.append(String.format("%02d", t.getHour()));
                case 'I' -> b.append(String.format("%02d", (t.getHour() + 11) % 12 + 1));
                case 'M' -> b.append(String.format("%02d", t.getMinute()));
                case 'S' -> b.append(String.format("%02d", t.getSecond()));
                case 'p' -> b.append(t.getHour() < 12 ? "AM" : "PM");
                case 'A' -> b.append(day);
                case 'a' -> b.append(day, 0, 3);
                case 'B' -> b.append(month);
                case 'b', 'h' -> b.append(month, 0, 3);
                case 'j' -> b.append(String.format("%03d", t.getDayOfYear()));
                case 'w' -> b.append(t.getDayOfWeek().getValue() % 7);
                case 'u' -> b.append(t.getDayOfWeek().getValue());
                case 'F' -> b.append(String.format("%d-%02d-%02d", t.getYear(), t.getMonthValue(), t.getDayOfMonth()));
                case 'T' -> b.append(String.format("%02d:%02d:%02d", t.getHour(), t.getMinute(), t.getSecond()));
                case 'D' ->
                    b.append(String.format("%02d/%02d/%02d", t.getMonthValue(), t.getDayOfMonth(), t.getYear() % 100));
                case '%' -> b.append('%');
                default -> throw new PyError("strftime_now: unsupported format directive %" + d);
            }
        }
        return b.toString();
    }
}
